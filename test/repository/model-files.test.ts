/**
 * The one rule for files a config names (DESIGN "Multi-tenancy", repository/model-files.ts): every
 * config field and parameter Warden reads as a path, attacked with `..`, an absolute path, a
 * symbolic link (file and folder) leading outside, a FIFO, a character device reached through a
 * link, a directory and an oversize file; plus a symlink race against the descriptor check, and
 * ONNX external data against a real ONNX model written by the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../host/src/contract/model-config.js';
import { readConfigFiles } from '../../host/src/lifecycle/config-files.js';
import { TritonError } from '../../host/src/contract/errors.js';
import type { ModelLoadContext } from '../../host/src/contract/types.js';
import { resolveOnnxModelFile } from '../../host/src/backends/onnxruntime/index.js';
import { externalDataRefs } from '../../host/src/backends/onnxruntime/external-data.js';
import { createFilesState, readFile as guestReadFile } from '../../host/src/backends/wasm/host/files.js';
import { PythonBackend } from '../../host/src/backends/python/backend.js';
import { readModelFile, readModelFileSync, relativeSegments } from '../../host/src/repository/model-files.js';
import { addModel } from '../helpers/onnx-model.js';
import { config as baseConfig } from '../helpers/model-version.js';
import { ensureBuilt, loadModel, newResolver, wasmConfig } from '../backends/wasm/helpers.js';

const SECRET = 'TOP-SECRET-OUTSIDE-0123456789';
let root: string;
let secretFile: string;
let outsideDir: string;

beforeAll(async () => {
  await ensureBuilt();
  root = mkdtempSync(join(tmpdir(), 'warden-model-files-'));
  outsideDir = join(root, 'outside');
  mkdirSync(outsideDir);
  secretFile = join(outsideDir, 'secret.txt');
  writeFileSync(secretFile, `${SECRET}\n`.repeat(4));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let seq = 0;
/** A fresh model directory `<root>/m<N>` with `1/` and `initial_state/`. */
function modelDir(): string {
  const d = join(root, `m${++seq}`);
  mkdirSync(join(d, '1'), { recursive: true });
  mkdirSync(join(d, 'initial_state'));
  return d;
}

const labelConfig = (label: string, params: Record<string, string> = {}): ModelConfig => {
  const c = baseConfig(
    'max_batch_size: 0\ninput [ { name: "I" data_type: TYPE_INT32 dims: [ 4 ] } ]\noutput [ { name: "O" data_type: TYPE_INT32 dims: [ 4 ] } ]',
  );
  return {
    ...c,
    output: [{ ...c.output[0]!, label_filename: label }],
    parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { string_value: v }])),
  };
};
const stateConfig = (file: string, params: Record<string, string> = {}): ModelConfig => {
  const c = baseConfig(`max_batch_size: 0
input [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "O" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching { direct { } state [ { input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 1 ]
  initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] data_file: ${JSON.stringify(file)} name: "i" } ] } ] }`);
  return { ...c, parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { string_value: v }])) };
};
const onnxCtx = (dir: string, file: string, params: Record<string, string> = {}): ModelLoadContext =>
  ({
    name: 'm',
    version: 1,
    modelPath: dir,
    versionPath: join(dir, '1'),
    config: {
      ...baseConfig('max_batch_size: 0'),
      default_model_filename: file,
      parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { string_value: v }])),
    },
  }) as unknown as ModelLoadContext;

/**
 * One config field (or parameter, or the sandbox's read-file) that names a file.
 * `folder`: where, inside the model directory, a plain name lands; `read`: the consumer's own
 * code path reading `name`; `capBytes`: the cap the test sets (an oversize file is one byte more);
 * `plainName`: the field takes a file name only (refuses any `/`).
 */
interface Field {
  field: string;
  folder: string;
  read: (dir: string, name: string, capBytes: number) => Promise<unknown>;
  capBytes: number;
  plainName?: boolean;
  /** a valid file's content (so that "not regular" and "too large" are the only reasons to refuse) */
  content?: () => Uint8Array;
}

const FIELDS: Field[] = [
  {
    field: 'output label_filename',
    folder: '',
    capBytes: 64,
    read: (dir, name, cap) => readConfigFiles(labelConfig(name, { label_file_max_bytes: String(cap) }), dir),
  },
  {
    field: 'sequence_batching initial_state data_file',
    folder: 'initial_state',
    capBytes: 64,
    read: (dir, name, cap) => readConfigFiles(stateConfig(name, { initial_state_max_bytes: String(cap) }), dir),
  },
  {
    field: 'onnxruntime default_model_filename',
    folder: '1',
    capBytes: 4096,
    content: () => addModel(4, { inline: new Float32Array([1, 2, 3, 4]) }),
    read: (dir, name, cap) => resolveOnnxModelFile(onnxCtx(dir, name, { model_file_max_bytes: String(cap) })),
  },
  {
    field: 'onnxruntime external data location',
    folder: '1',
    capBytes: 16,
    read: async (dir, name, cap) => {
      writeFileSync(join(dir, '1', 'ext.onnx'), addModel(4, { external: { location: name } }));
      return resolveOnnxModelFile(onnxCtx(dir, 'ext.onnx', { external_data_max_bytes: String(cap) }));
    },
  },
  {
    field: 'wasm default_model_filename',
    folder: '1',
    capBytes: 512 * 1024 * 1024,
    plainName: true,
    read: async (dir, name) => {
      const cfg = { ...wasmConfig('m', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]), default_model_filename: name };
      return loadModel(newResolver('v8'), cfg, dir);
    },
  },
  {
    field: 'python default_model_filename',
    folder: '1',
    capBytes: 64 * 1024 * 1024,
    plainName: true,
    read: async (dir, name) => {
      const backend = new PythonBackend({ name: 'python', metrics: {} as never, cacheDir: join(root, 'cache'), logger: pino({ level: 'silent' }) });
      const ctx = { ...onnxCtx(dir, name), origin: { kind: 'repository', repository: root }, logger: pino({ level: 'silent' }), autoCompleteConfig: false };
      (ctx.config as ModelConfig).default_model_filename = name;
      return backend.loadModel(ctx as ModelLoadContext);
    },
  },
  {
    field: 'wasm guest read-file',
    folder: '1',
    capBytes: 64,
    read: async (dir, name, cap) => guestReadFile(createFilesState(join(dir, '1'), cap), name),
  },
];

/** The refusal `p` must end in: a TritonError (or the sandbox's WIT error), no secret, no host path. */
async function refused(p: Promise<unknown>, echoed?: string): Promise<string> {
  let err: unknown;
  try {
    const v = await p;
    throw new Error(`not refused: ${JSON.stringify(v)?.slice(0, 200)}`);
  } catch (e) {
    err = e;
  }
  const message =
    err instanceof TritonError
      ? err.message
      : typeof err === 'object' && err !== null && 'payload' in err
        ? String((err as { payload: { message: string } }).payload.message)
        : undefined;
  if (message === undefined) throw err;
  // the name as the config (or guest) gave it may be echoed when it is relative
  const rest = echoed !== undefined ? message.split(echoed).join('<name>') : message;
  expect(message).not.toContain(SECRET);
  expect(rest).not.toContain(root);
  expect(rest).not.toContain('/etc');
  if (err instanceof TritonError) expect(['INVALID_ARG', 'NOT_FOUND']).toContain(err.code);
  return message;
}

type Attack = [name: string, setup: (dir: string, folder: string, f: Field) => string];

const ATTACKS: Attack[] = [
  ['../ out of the model directory', (_d, folder) => `${folder ? '../' : ''}../outside/secret.txt`],
  ['an absolute path', () => secretFile],
  ['a symbolic link to a file outside', (d, folder) => (symlinkSync(secretFile, join(d, folder, 'evil')), 'evil')],
  ['a symbolic link to a folder outside', (d, folder, f) => (symlinkSync(outsideDir, join(d, folder, 'sub')), f.plainName ? 'sub' : 'sub/secret.txt')],
  ['a FIFO', (d, folder) => (execFileSync('mkfifo', [join(d, folder, 'fifo')]), 'fifo')],
  ['/dev/zero through a link', (d, folder) => (symlinkSync('/dev/zero', join(d, folder, 'zero')), 'zero')],
  ['/etc/passwd through a link', (d, folder) => (symlinkSync('/etc/passwd', join(d, folder, 'pw')), 'pw')],
  ['a directory', (d, folder) => (mkdirSync(join(d, folder, 'adir')), 'adir')],
  [
    'a file over the cap',
    (d, folder, f) => {
      const p = join(d, folder, 'big');
      writeFileSync(p, '');
      truncateSync(p, f.capBytes + 1); // sparse: the cap is checked on fstat before any read
      return 'big';
    },
  ],
];

describe.each(FIELDS)('$field', (f) => {
  it.each(ATTACKS)('refuses %s', async (_what, setup) => {
    const dir = modelDir();
    const name = setup(dir, f.folder, f);
    // a guest's own path comes back to it as given; configs' names only when relative
    await refused(f.read(dir, name, f.capBytes), f.field === 'wasm guest read-file' || !name.startsWith('/') ? name : undefined);
  });

  it('reads a regular file inside the model directory', async () => {
    if (f.field.startsWith('wasm default') || f.field.startsWith('python')) return; // loaded end to end elsewhere
    const dir = modelDir();
    writeFileSync(join(dir, f.folder, 'ok.bin'), f.content?.() ?? new Uint8Array(f.field.includes('initial_state') ? 4 : 16));
    await expect(f.read(dir, 'ok.bin', f.capBytes)).resolves.toBeDefined();
  });
});

describe('syntax (before any filesystem call)', () => {
  it.each([['../x'], ['a/../../x'], ['/etc/shadow'], ['a//b'], ['./a'], ['a\\b'], ['a\0b'], ['C:x'], [''], ['x'.repeat(2000)]])('%j is refused', (name) => {
    expect(() => relativeSegments(name, 'output label_filename')).toThrow(TritonError);
  });
  it('an absolute name is not echoed', () => {
    expect(() => relativeSegments('/etc/shadow', 'output label_filename')).toThrow(
      /^output label_filename is an absolute path: it must be a path relative to the model directory$/,
    );
  });
  it('a missing file and a link to an existing file outside get the same answer', async () => {
    const dir = modelDir();
    symlinkSync(secretFile, join(dir, 'exists'));
    symlinkSync(join(outsideDir, 'nope'), join(dir, 'nope'));
    const a = await refused(readModelFile({ modelDir: dir, name: 'exists', field: 'f', maxBytes: 100 }));
    const b = await refused(readModelFile({ modelDir: dir, name: 'nope', field: 'f', maxBytes: 100 }));
    expect(a.replace("'exists'", 'X')).toBe(b.replace("'nope'", 'X'));
  });
});

describe('the byte cap', () => {
  // Over 1 MiB, so the read takes more than one chunk.
  const cap = (1 << 20) + 3;
  it('a file of exactly the cap is read whole; one byte more is refused (async and sync)', async () => {
    const dir = modelDir();
    const bytes = Buffer.alloc(cap + 1, 7);
    bytes[cap - 1] = 9;
    writeFileSync(join(dir, 'at'), bytes.subarray(0, cap));
    writeFileSync(join(dir, 'over'), bytes);
    const at = { modelDir: dir, name: 'at', field: 'f', maxBytes: cap };
    expect((await readModelFile(at)).equals(bytes.subarray(0, cap))).toBe(true);
    expect(readModelFileSync(at).equals(bytes.subarray(0, cap))).toBe(true);
    const over = { ...at, name: 'over' };
    expect(await refused(readModelFile(over))).toMatch(new RegExp(`^f 'over' is larger than ${cap} bytes`));
    expect(() => readModelFileSync(over)).toThrow(new RegExp(`^f 'over' is larger than ${cap} bytes`));
  });
});

describe('a symbolic link swapped in during the open', () => {
  it('never returns a byte from outside (file and folder flips, async and sync reads)', async () => {
    const dir = modelDir();
    writeFileSync(join(dir, 'inside.txt'), 'INSIDE\n');
    mkdirSync(join(dir, 'realdir'));
    writeFileSync(join(dir, 'realdir', 'secret.txt'), 'INSIDE\n');
    // a thread keeps renaming a regular file / a link to the secret over `flip`, and a folder / a
    // link to the outside folder over `dflip`
    const flipper = new Worker(
      `const fs = require('node:fs');
       const { dir, secret, outside } = require('node:worker_threads').workerData;
       const p = (n) => dir + '/' + n;
       for (let i = 0; ; i++) {
         try {
           fs.copyFileSync(p('inside.txt'), p('f.tmp')); fs.renameSync(p('f.tmp'), p('flip'));
           fs.symlinkSync(secret, p('l.tmp')); fs.renameSync(p('l.tmp'), p('flip'));
           fs.rmSync(p('dflip'), { recursive: true, force: true });
           fs.mkdirSync(p('dflip')); fs.writeFileSync(p('dflip/secret.txt'), 'INSIDE');
           fs.symlinkSync(outside, p('dl.tmp'));
           fs.rmSync(p('dflip'), { recursive: true, force: true }); fs.renameSync(p('dl.tmp'), p('dflip'));
         } catch {}
       }`,
      { eval: true, workerData: { dir, secret: secretFile, outside: outsideDir } },
    );
    let ok = 0;
    let refusedCount = 0;
    const leaks: string[] = [];
    const check = (b: Buffer) => {
      const s = b.toString();
      if (s.includes(SECRET)) leaks.push(s.slice(0, 40));
      else ok++;
    };
    try {
      for (let i = 0; i < 1500; i++) {
        for (const name of ['flip', 'dflip/secret.txt']) {
          const spec = { modelDir: dir, name, field: 'output label_filename', maxBytes: 1 << 16 };
          try {
            check(await readModelFile(spec));
          } catch (e) {
            if (!(e instanceof TritonError)) throw e;
            expect(e.message).not.toContain(SECRET);
            refusedCount++;
          }
          try {
            check(readModelFileSync(spec));
          } catch (e) {
            if (!(e instanceof TritonError)) throw e;
            refusedCount++;
          }
        }
      }
    } finally {
      await flipper.terminate();
    }
    expect(leaks).toEqual([]);
    expect(ok + refusedCount).toBe(1500 * 4);
    expect(ok).toBeGreaterThan(0);
    expect(refusedCount).toBeGreaterThan(0);
  }, 120_000);
});

describe('ONNX external data (a real ONNX model)', () => {
  it('the walk finds locations in graph initializers and in Constant node attributes', () => {
    expect(externalDataRefs(addModel(4, { external: { location: 'w.bin' } }))).toEqual([{ tensor: 'W', location: 'w.bin' }]);
    expect(externalDataRefs(addModel(4, { external: { location: '../../../etc/passwd' } }, 'constant'))).toEqual([
      { tensor: 'W', location: '../../../etc/passwd' },
    ]);
    expect(externalDataRefs(addModel(4, { inline: new Float32Array(4) }))).toEqual([]);
    expect(() => externalDataRefs(new Uint8Array([0x3a, 0xff, 0xff]))).toThrow(/cannot be parsed/);
  });

  it.each(['graph', 'constant'] as const)('a %s tensor naming ../../../etc/passwd fails the load without a host path; one inside loads', async (where) => {
    const dir = modelDir();
    writeFileSync(join(dir, '1', 'model.onnx'), addModel(4, { external: { location: '../../../../../../../../etc/passwd' } }, where));
    const msg = await refused(resolveOnnxModelFile(onnxCtx(dir, '')), '../../../../../../../../etc/passwd');
    expect(msg).toMatch(/external data location of tensor "W" in default_model_filename 'model.onnx' "?'?\.\.\/.*must be a path inside the model directory/);
    writeFileSync(join(dir, '1', 'w.bin'), Buffer.from(new Float32Array([1, 2, 3, 4]).buffer));
    writeFileSync(join(dir, '1', 'model.onnx'), addModel(4, { external: { location: 'w.bin' } }, where));
    expect(await resolveOnnxModelFile(onnxCtx(dir, ''))).toMatch(/\/1\/model\.onnx$/);
  });
});
