/**
 * The load API attacked as a hostile client would (DESIGN "Multi-tenancy"; spec §3.1): each
 * test is an attack that worked before the fix. Real server, real sockets.
 */
import { execFileSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunningServer, ServerOptions } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { PROJECT_ROOT, postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';

const running: RunningServer[] = [];
const repos: TempRepo[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});
afterAll(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

async function serve(opts: Partial<ServerOptions> = {}, examples = ['simple']): Promise<{ s: RunningServer; repo: TempRepo }> {
  const repo = tempRepo(examples);
  repos.push(repo);
  const s = await startTestServer(repo, {
    loadModels: ['*'],
    ...opts,
  });
  running.push(s);
  return { s, repo };
}

const b64 = (x: string | Uint8Array) => Buffer.from(x).toString('base64');
const ready = async (s: RunningServer) => (await fetch(`${s.httpUrl}/v2/health/ready`)).status;

describe('readiness is not hostage to a load', () => {
  it('a failed upload never makes /v2/health/ready fail', async () => {
    const { s } = await serve();
    expect(await ready(s)).toBe(200);
    const config = JSON.stringify({
      backend: 'wasm',
      input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }],
      output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
    });
    const r = await postJson(`${s.httpUrl}/v2/repository/models/broken_upload/load`, { parameters: { config, 'file:1/model.wasm': b64('not a component') } });
    expect(r.status).toBe(400);
    expect(await ready(s)).toBe(200);
  });

  it('a failed repository model fails readiness until it is unloaded', async () => {
    const { s, repo } = await serve();
    repo.write('no_version/config.pbtxt', 'platform: "onnxruntime_onnx"\n');
    expect((await postJson(`${s.httpUrl}/v2/repository/models/no_version/load`, {})).status).toBe(400);
    expect(await ready(s)).toBe(400);
    expect((await postJson(`${s.httpUrl}/v2/repository/models/no_version/unload`, {})).status).toBe(200);
    expect(await ready(s)).toBe(200);
  });
});

describe('uploads never run native code', () => {
  /** A shared library whose constructor writes `marker`: if it is ever dlopened, the marker exists. */
  function evilLibrary(marker: string): Uint8Array {
    const dir = mkdtempSync(join(tmpdir(), 'warden-evil-'));
    try {
      writeFileSync(
        join(dir, 'evil.c'),
        `#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) { FILE *f = fopen("${marker}", "w"); if (f) fclose(f); }\nint TRITONBACKEND_ModelInstanceExecute(void) { return 0; }\n`,
      );
      execFileSync('cc', ['-shared', '-fPIC', '-o', join(dir, 'evil.so'), join(dir, 'evil.c')]);
      return readFileSync(join(dir, 'evil.so'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const io = { input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }], output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }] };

  it('a library in the upload, by backend name, runtime or python, in any folder: refused, never loaded', async () => {
    const { s } = await serve();
    const marker = join(mkdtempSync(join(tmpdir(), 'warden-marker-')), 'pwned');
    const lib = b64(evilLibrary(marker));
    const attempts: Record<string, unknown>[] = [
      { config: JSON.stringify({ backend: 'pwn', ...io }), 'file:1/libtriton_pwn.so': lib, 'file:libtriton_pwn.so': lib },
      { config: JSON.stringify({ backend: 'identity', ...io }), 'file:1/libtriton_identity.so': lib },
      { config: JSON.stringify({ backend: 'wasm', runtime: 'libtriton_pwn.so', ...io }), 'file:1/libtriton_pwn.so': lib, 'file:1/model.wasm': lib },
      { config: JSON.stringify({ backend: 'onnxruntime', runtime: 'libtriton_pwn.so', ...io }), 'file:libtriton_pwn.so': lib },
      { config: JSON.stringify({ platform: 'tensorrt_plan', ...io }), 'file:1/model.plan': lib, 'file:1/libtriton_tensorrt.so': lib },
      { config: JSON.stringify({ backend: 'python', ...io }), 'file:1/model.py': b64('open("' + marker + '", "w")\n') },
    ];
    for (const parameters of attempts) {
      const r = await postJson(`${s.httpUrl}/v2/repository/models/evil/load`, { parameters });
      expect(r.status, `${String(parameters.config)}: ${r.text}`).toBe(400);
      expect(r.json.error).toMatch(/cannot be loaded from uploaded files|uploaded models may not set/);
    }
    expect(existsSync(marker)).toBe(false);
    expect((await fetch(`${s.httpUrl}/v2/models/evil/ready`)).status).not.toBe(200);
  });

  it('the native resolver refuses an uploaded model even when asked directly', async () => {
    const { NativeBackendResolver } = await import('../../../host/src/backends/native/index.js');
    const { backendResolveRequest } = await import('../../../host/src/contract/load-context.js');
    const { pino } = await import('pino');
    const resolver = new NativeBackendResolver({ backendDirectory: tmpdir(), autoCompleteConfig: true, logger: pino({ level: 'silent' }) });
    const config = { name: 'evil', backend: 'pwn', runtime: '', platform: '' } as never;
    const request = backendResolveRequest(config, join(tmpdir(), 'evil'), 1, { kind: 'upload', tenant: '' });
    await expect(resolver.resolve(request)).rejects.toThrow(/cannot serve uploaded models/);
  });
});

describe('model names are checked where they enter', () => {
  it('path traversal, control characters and oversize names: 400 on load/unload, nothing written outside', async () => {
    const { s, repo } = await serve();
    const outside = () =>
      readdirSync(join(repo.path, '..'))
        .filter((f) => /escaped|^\.\.|^a$|^b$/.test(f))
        .sort();
    const before = outside();
    const config = JSON.stringify({
      backend: 'wasm',
      input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }],
      output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
    });
    const names = ['..%2F..%2Fescaped', '%2E%2E', '..', 'a%2Fb', 'a%5Cb', 'bad%0Aname', 'nul%00name', 'x'.repeat(300)];
    for (const n of names) {
      const load = await postJson(`${s.httpUrl}/v2/repository/models/${n}/load`, { parameters: { config, 'file:1/model.wasm': b64('x') } });
      expect([400, 404], `${n}: ${load.text}`).toContain(load.status);
      if (load.status === 400) expect(load.json.error).toMatch(/invalid model name/);
      const unload = await postJson(`${s.httpUrl}/v2/repository/models/${n}/unload`, {});
      expect([400, 404], n).toContain(unload.status);
    }
    expect(outside()).toEqual(before);
    expect(readdirSync(repo.path).sort()).toEqual(['simple']);
    expect(readdirSync('/').filter((f) => f.startsWith('escaped'))).toEqual([]);
    expect(readdirSync(join(tmpdir(), '..')).filter((f) => f.startsWith('escaped'))).toEqual([]);
    expect(await ready(s)).toBe(200);
  });
});

describe('counts from a config are bounded before anything is allocated', () => {
  it('instance_group count 2147483647: refused at once; the server keeps serving', async () => {
    const { s, repo } = await serve({}, ['simple', 'addsub_onnx']);
    const cfg = readFileSync(join(repo.path, 'addsub_onnx', 'config.pbtxt'), 'utf8') + '\ninstance_group [ { count: 2147483647 kind: KIND_CPU } ]\n';
    repo.write('addsub_onnx/config.pbtxt', cfg);
    const t0 = Date.now();
    const r = await postJson(`${s.httpUrl}/v2/repository/models/addsub_onnx/load`, {});
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/2147483647 instances, more than this server allows per model \(64/);
    expect(Date.now() - t0).toBeLessThan(5000);
    const infer = await postJson(`${s.httpUrl}/v2/models/simple/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
      ],
    });
    expect(infer.status).toBe(200);
  });

  it('the cap is a flag', async () => {
    const { s, repo } = await serve({ caps: { maxInstancesPerModel: 2 } }, ['simple', 'addsub_onnx']);
    repo.write(
      'addsub_onnx/config.pbtxt',
      readFileSync(join(repo.path, 'addsub_onnx', 'config.pbtxt'), 'utf8') + '\ninstance_group [ { count: 3 kind: KIND_CPU } ]\n',
    );
    const r = await postJson(`${s.httpUrl}/v2/repository/models/addsub_onnx/load`, {});
    expect(r.json.error).toMatch(/3 instances, more than this server allows per model \(2/);
  });
});

describe('slow and greedy clients', () => {
  const open = (url: string): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const u = new URL(url);
      const sock = connect(Number(u.port), u.hostname, () => resolve(sock));
      sock.once('error', reject);
    });
  /** Resolves with the ms until the server closed the socket (or rejects after `limitMs`). */
  const closedWithin = (sock: Socket, limitMs: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const t0 = Date.now();
      if (sock.destroyed) return resolve(0);
      const timer = setTimeout(() => reject(new Error(`socket still open after ${limitMs} ms`)), limitMs);
      sock.on('data', () => undefined);
      sock.once('close', () => {
        clearTimeout(timer);
        resolve(Date.now() - t0);
      });
    });

  // [title, the limits, the request's start, what trickles after it every 50 ms, never finishing it]
  it.each([
    [
      'headers that never finish: the connection is closed after the header timeout',
      { headerTimeoutMs: 300, requestTimeoutMs: 10_000 },
      'POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nX-Slow: ',
      'a',
    ],
    [
      'a body that never finishes: the connection is closed after the request timeout',
      { headerTimeoutMs: 5_000, requestTimeoutMs: 500 },
      'POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"inputs":',
      ' ',
    ],
  ])('%s', async (_title, limits, start, trickle) => {
    const { s } = await serve({ httpLimits: { ...limits, maxConnections: 100 } });
    const sock = await open(s.httpUrl);
    sock.write(start);
    const tick = setInterval(() => sock.writable && sock.write(trickle), 50);
    try {
      expect(await closedWithin(sock, 3000)).toBeLessThan(3000);
    } finally {
      clearInterval(tick);
    }
  });

  it('connections beyond the cap are refused; the ones inside it are served', async () => {
    const { s } = await serve({ httpLimits: { headerTimeoutMs: 5_000, requestTimeoutMs: 5_000, maxConnections: 2 } });
    const held = [await open(s.httpUrl), await open(s.httpUrl)];
    // Refused at accept with a reset: the connect itself may already fail (ECONNRESET).
    const extra = await open(s.httpUrl).catch((e: NodeJS.ErrnoException) => {
      expect(e.code).toBe('ECONNRESET');
      return undefined;
    });
    if (extra) expect(await closedWithin(extra, 2000)).toBeLessThan(2000);
    held[0]!.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      held[0]!.on('data', (d) => (text += d.toString()));
      held[0]!.once('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    held[1]!.destroy();
  });
});

describe('errors never show absolute host paths', () => {
  it('load failures, index reasons and inference errors name models and files relative to the model', async () => {
    const { s, repo } = await serve({}, ['simple', 'addsub_onnx']);
    repo.addModel('broken_syntax', 'platform: "onnxruntime_onnx" max_batch_size: [\n');
    repo.addModel('no_library', 'backend: "warden_not_installed"\n');
    repo.addModel(
      'no_file',
      readFileSync(join(repo.path, 'addsub_onnx', 'config.pbtxt'), 'utf8').replace('addsub_onnx', 'no_file') + '\ndefault_model_filename: "absent.onnx"\n',
    );
    const texts: string[] = [];
    for (const m of ['broken_syntax', 'no_library', 'no_file']) {
      const r = await postJson(`${s.httpUrl}/v2/repository/models/${m}/load`, {});
      expect(r.status, m).toBeGreaterThanOrEqual(400);
      texts.push(r.text);
    }
    const onnx = JSON.stringify({
      platform: 'onnxruntime_onnx',
      input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [1] }],
      output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [1] }],
    });
    const garbage = await postJson(`${s.httpUrl}/v2/repository/models/garbage_onnx/load`, {
      parameters: { config: onnx, 'file:1/model.onnx': b64('not an onnx graph') },
    });
    expect(garbage.status).toBeGreaterThanOrEqual(400);
    texts.push(garbage.text);
    texts.push((await postJson(`${s.httpUrl}/v2/repository/index`, {})).text);
    const joined = texts.join('\n');
    expect(joined).toMatch(/no_library/);
    for (const root of [repo.path, tmpdir(), PROJECT_ROOT, process.cwd()]) expect(joined).not.toContain(root);
    expect(joined).not.toMatch(/(^|[\s'"(])\/(tmp|home|root|work|usr|var)\//);
  });
});

describe('upload size', () => {
  it('--max-upload-bytes refuses a larger upload before anything is written', async () => {
    const { s, repo } = await serve({ maxUploadBytes: 1000 });
    const config = JSON.stringify({
      backend: 'wasm',
      input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }],
      output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
    });
    const r = await postJson(`${s.httpUrl}/v2/repository/models/big/load`, { parameters: { config, 'file:1/model.wasm': b64(new Uint8Array(2000)) } });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/exceeds the limit of 1000 bytes/);
    expect(readdirSync(repo.path).filter((f) => f !== 'simple' && f !== '.warden-uploads')).toEqual([]);
    const staged = join(repo.path, '.warden-uploads', '.staging');
    expect(existsSync(staged) ? readdirSync(staged) : []).toEqual([]);
  });
});
