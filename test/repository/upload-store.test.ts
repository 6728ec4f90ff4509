/**
 * The upload store (host/src/repository/upload-store.ts) on real files: commit and read back, a
 * replacement keeps the old generation committed until the pointer switches, names that are not
 * plain file names never become paths (nothing is written outside the root), the size limit is
 * checked before anything is written, start-up clean-up removes only the store's own leftovers, and
 * error messages carry no host paths.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TritonError } from '../../host/src/contract/errors.js';
import type { ModelKey } from '../../host/src/contract/types.js';
import { decodeFileOverride, type FileOverrides } from '../../host/src/repository/overrides.js';
import { UploadStore, type CommitStep } from '../../host/src/repository/upload-store.js';
import { UploadBlobs } from '../../host/src/repository/upload-blobs.js';

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

/** A fresh parent directory; the store root is `<parent>/store` (not created). */
function parent(): string {
  const d = mkdtempSync(join(tmpdir(), 'warden-store-test-'));
  dirs.push(d);
  return d;
}

/** Every path under `dir`, relative, sorted (directories end with '/'). */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      out.push(relative(dir, p) + (e.isDirectory() ? '/' : ''));
      if (e.isDirectory()) walk(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out.sort();
}

/** The blob path of a content: `.blobs/sha256/<hex>`. */
const blob = (content: string): string => `.blobs/sha256/${createHash('sha256').update(content).digest('hex')}`;

const files = (entries: Record<string, string>): FileOverrides => new Map(Object.entries(entries).map(([k, v]) => [k, new Uint8Array(Buffer.from(v))]));
const ACME: ModelKey = { namespace: 'acme', name: 'm' };

async function expectInvalid(p: Promise<unknown>, pattern?: RegExp): Promise<TritonError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(TritonError);
  expect((e as TritonError).code).toBe('INVALID_ARG');
  if (pattern) expect((e as TritonError).message).toMatch(pattern);
  return e as TritonError;
}

describe('commit and read back', () => {
  it('stage + publish: the committed generation holds the files and the config override', async () => {
    const p = parent();
    const store = new UploadStore({ root: join(p, 'store') });
    const config = { name: 'm', backend: 'wasm', max_batch_size: 0 };
    const gen = await store.stage(ACME, files({ '1/model.wasm': 'AAA', 'labels.txt': 'a\nb\n', '1/sub/deep.bin': 'x' }), config);
    expect(gen.generation).toBe(1);
    // Not committed yet: nothing to serve after a restart.
    expect(await store.current(ACME)).toBeUndefined();
    expect(await store.list()).toEqual([]);
    await store.publish(ACME, gen.generation, config);
    const cur = await store.current(ACME);
    expect(cur).toMatchObject({ key: ACME, generation: 1, configOverride: config });
    expect(readFileSync(join(cur!.modelPath, '1/model.wasm'), 'utf8')).toBe('AAA');
    expect(readFileSync(join(cur!.modelPath, 'labels.txt'), 'utf8')).toBe('a\nb\n');
    expect(readFileSync(join(cur!.modelPath, '1/sub/deep.bin'), 'utf8')).toBe('x');
    expect(await store.list()).toEqual([ACME]);
    // Only the store root appeared in the parent; no staging leftovers.
    expect(readdirSync(p)).toEqual(['store']);
    expect(tree(join(p, 'store'))).toEqual([
      '.blobs/',
      '.blobs/sha256/',
      ...[blob('AAA'), blob('a\nb\n'), blob('x')].sort(),
      '.staging/',
      'acme/',
      'acme/m/',
      'acme/m/CURRENT',
      'acme/m/g1/',
      'acme/m/g1/1/',
      'acme/m/g1/1/model.wasm',
      'acme/m/g1/1/sub/',
      'acme/m/g1/1/sub/deep.bin',
      'acme/m/g1/labels.txt',
    ]);
  });

  it('the operator namespace lives in .operator, which no tenant id can name', async () => {
    const p = parent();
    const store = new UploadStore({ root: join(p, 'store') });
    const gen = await store.stage({ namespace: '', name: 'm' }, files({ '1/a': 'x' }), {});
    expect(relative(join(p, 'store'), gen.modelPath)).toBe('.operator/m/g1');
    await expectInvalid(store.stage({ namespace: '.operator', name: 'm' }, files({ '1/a': 'x' }), {}), /invalid namespace/);
  });

  it('a replacement keeps the old generation committed until the pointer switches; prune removes the old one', async () => {
    const p = parent();
    const store = new UploadStore({ root: join(p, 'store') });
    const a = await store.stage(ACME, files({ '1/model.bin': 'A', '1/extra.bin': 'A' }), { v: 'A' });
    await store.publish(ACME, a.generation, { v: 'A' });
    const seen: [CommitStep, number | undefined][] = [];
    store.onCommitStep = async (step) => {
      const cur = await store.current(ACME);
      seen.push([step, cur?.generation]);
      // The committed generation is intact at every step.
      expect(readFileSync(join(cur!.modelPath, '1/model.bin'), 'utf8')).toBe(cur!.generation === 1 ? 'A' : 'B');
      expect(readFileSync(join(cur!.modelPath, '1/extra.bin'), 'utf8')).toBe(cur!.generation === 1 ? 'A' : 'B');
    };
    const b = await store.stage(ACME, files({ '1/model.bin': 'B', '1/extra.bin': 'B' }), { v: 'B' });
    expect(b.generation).toBe(2);
    await store.publish(ACME, b.generation, { v: 'B' });
    expect(seen).toEqual([
      ['staging', 1],
      ['file', 1],
      ['file', 1],
      ['staged', 1],
      ['renamed', 1],
      ['pointer-staged', 1],
      ['switched', 2],
    ]);
    expect((await store.current(ACME))?.configOverride).toEqual({ v: 'B' });
    // The old generation stays until the caller says it is unused.
    expect(existsSync(a.modelPath)).toBe(true);
    await store.prune(ACME, new Set([1]), 'tenant');
    expect(existsSync(a.modelPath)).toBe(true);
    await store.prune(ACME, new Set(), 'tenant');
    expect(existsSync(a.modelPath)).toBe(false);
    expect(existsSync(b.modelPath)).toBe(true);
    // A discarded (never published) generation goes; the committed one stays.
    const c = await store.stage(ACME, files({ '1/model.bin': 'C' }), {});
    expect(c.generation).toBe(3);
    await store.discard(c);
    expect(existsSync(c.modelPath)).toBe(false);
    expect((await store.current(ACME))?.generation).toBe(2);
    // forget: no longer committed; prune then removes the files and the model directory.
    await store.forget(ACME);
    expect(await store.current(ACME)).toBeUndefined();
    await store.prune(ACME, new Set(), 'tenant');
    // the blobs went with the last generations that linked them
    expect(tree(join(p, 'store'))).toEqual(['.blobs/', '.blobs/sha256/', '.staging/', 'acme/']);
  });

  it('operator prune drops everything unused, CURRENT included', async () => {
    const p = parent();
    const store = new UploadStore({ root: join(p, 'store') });
    const key = { namespace: '', name: 'm' };
    const g = await store.stage(key, files({ '1/a': 'x' }), {});
    await store.publish(key, g.generation, {});
    await store.prune(key, new Set([g.generation]), 'operator');
    expect(existsSync(g.modelPath)).toBe(true);
    await store.prune(key, new Set(), 'operator');
    expect(tree(join(p, 'store'))).toEqual(['.blobs/', '.blobs/sha256/', '.operator/', '.staging/']);
  });

  it('the same content is stored once: generations link one blob; a blob changed in place is not linked again', async () => {
    const p = parent();
    const root = join(p, 'store');
    const store = new UploadStore({ root });
    const component = 'the same component bytes';
    const keys = ['m1', 'm2', 'm3'].map((name) => ({ namespace: name === 'm3' ? 'bob' : 'acme', name }));
    const gens = [];
    for (const k of keys) {
      const g = await store.stage(k, files({ '1/model.wasm': component, 'labels.txt': k.name }), {});
      await store.publish(k, g.generation, {});
      gens.push(g);
    }
    const st = gens.map((g) => statSync(join(g.modelPath, '1/model.wasm')));
    expect(new Set(st.map((s) => s.ino)).size).toBe(1); // one file on disk
    expect(statSync(join(root, blob(component))).nlink).toBe(4); // the blob and three generations
    expect(statSync(join(gens[0]!.modelPath, 'labels.txt')).ino).not.toBe(st[0]!.ino);
    // someone changes a generation's file in place: every link sees it, so the next upload of the
    // same bytes gets a fresh, intact copy instead of the changed one
    writeFileSync(join(gens[0]!.modelPath, '1/model.wasm'), 'changed in place!!!!!!!!');
    const next = await store.stage({ namespace: 'acme', name: 'm4' }, files({ '1/model.wasm': component }), {});
    expect(readFileSync(join(next.modelPath, '1/model.wasm'), 'utf8')).toBe(component);
    expect(statSync(join(next.modelPath, '1/model.wasm')).ino).not.toBe(st[0]!.ino);
    // removing every model removes the blobs
    await store.discard(next);
    for (const k of keys) {
      await store.forget(k);
      await store.prune(k, new Set(), 'tenant');
    }
    expect(readdirSync(join(root, '.blobs/sha256'))).toEqual([]);
  });

  it('generation numbers are never reused, even when stages run concurrently', async () => {
    const store = new UploadStore({ root: join(parent(), 'store') });
    const gens = await Promise.all([1, 2, 3, 4].map((i) => store.stage(ACME, files({ '1/a': String(i) }), {})));
    expect(gens.map((g) => g.generation).sort()).toEqual([1, 2, 3, 4]);
  });
});

describe('names never become paths outside the store', () => {
  const BAD_MODEL_NAMES = [
    '',
    '.',
    '..',
    decodeURIComponent('%2e%2e'),
    'a/b',
    decodeURIComponent('..%2F..%2Fetc'),
    'a\\b',
    'a\u0000b',
    'a\nb',
    'x'.repeat(256),
    'é'.repeat(128),
  ];
  const BAD_NAMESPACES = ['..', '.operator', '.staging', '-x', 'a/b', 'a.b', 'x'.repeat(65), '../../tmp'];
  const BAD_PATHS = [
    '../x',
    '1/../../x',
    '/etc/passwd',
    '1/./x',
    './1/x',
    '1//x',
    '1/',
    'a\\b',
    '1/\u0000',
    '1/a\u0007',
    `1/${'x'.repeat(256)}`,
    '1/..',
    '..',
    decodeURIComponent('%2e%2e/x'),
    `${'a/'.repeat(600)}x`,
  ];

  it('rejects bad model names, namespaces and file paths with INVALID_ARG, writing nothing', async () => {
    const p = parent();
    writeFileSync(join(p, 'sibling.txt'), 'mine');
    const store = new UploadStore({ root: join(p, 'store') });
    const before = tree(p);
    for (const name of BAD_MODEL_NAMES) {
      const e = await expectInvalid(store.stage({ namespace: 'acme', name }, files({ '1/a': 'x' }), {}), /invalid model name/);
      expect(e.message).not.toContain('\u0000');
      await expectInvalid(store.stage({ namespace: '', name }, files({ '1/a': 'x' }), {}));
      await expectInvalid(store.current({ namespace: 'acme', name }));
      await expectInvalid(store.publish({ namespace: 'acme', name }, 1, {}));
      await expectInvalid(store.prune({ namespace: 'acme', name }, new Set(), 'tenant'));
      await expectInvalid(store.forget({ namespace: 'acme', name }));
    }
    for (const namespace of BAD_NAMESPACES) {
      await expectInvalid(store.stage({ namespace, name: 'm' }, files({ '1/a': 'x' }), {}), /invalid namespace/);
      await expectInvalid(store.current({ namespace, name: 'm' }));
    }
    for (const rel of BAD_PATHS) {
      await expectInvalid(store.stage(ACME, files({ [rel]: 'x' }), {}), /invalid file override path/);
      expect(() => decodeFileOverride(`file:${rel}`, 'eA==')).toThrow(TritonError);
    }
    // A path that is both a file and a directory.
    await expectInvalid(store.stage(ACME, files({ '1': 'x', '1/model.bin': 'y' }), {}), /both a file and a directory/);
    expect(tree(p)).toEqual(before);
    expect(existsSync(join(p, 'store'))).toBe(false);
    // Good names still work, and only the root appears in the parent.
    expect(decodeFileOverride('file:1/model.onnx', 'eA==')).toEqual(['1/model.onnx', new Uint8Array([0x78])]);
    await store.stage({ namespace: 'a-b_C9', name: '%2e%2e' }, files({ '1/a': 'x' }), {});
    expect(readdirSync(p).sort()).toEqual(['sibling.txt', 'store']);
  });

  it('maxUploadBytes: the decoded bytes plus the config JSON, checked before anything is written', async () => {
    const p = parent();
    const store = new UploadStore({ root: join(p, 'store') });
    const config = { name: 'm' }; // 12 bytes of JSON
    const upload = files({ '1/a': 'x'.repeat(100), '1/b': 'y'.repeat(50) });
    const e = await expectInvalid(store.stage(ACME, upload, config, { maxUploadBytes: 161 }), /162 bytes exceeds the limit of 161 bytes/);
    expect(e.message).not.toContain(p);
    expect(existsSync(join(p, 'store'))).toBe(false);
    await store.stage(ACME, upload, config, { maxUploadBytes: 162 });
    expect(existsSync(join(p, 'store', 'acme', 'm', 'g1', '1', 'b'))).toBe(true);
  });
});

describe('start-up clean-up', () => {
  it("removes staging leftovers, uncommitted generations and the operator's uploads; nothing else", async () => {
    const p = parent();
    const root = join(p, 'store');
    const store = new UploadStore({ root });
    // A committed tenant model (g1), replaced by g2, then an uncommitted g3 and a pointer temp file.
    for (const v of ['A', 'B']) {
      const g = await store.stage(ACME, files({ '1/model.bin': v }), { v });
      await store.publish(ACME, g.generation, { v });
    }
    await store.stage(ACME, files({ '1/model.bin': 'C' }), {});
    writeFileSync(join(root, 'acme/m/CURRENT.tmp-0123456789abcdef'), '{');
    // A tenant model never committed, another namespace's committed one, an operator upload.
    await store.stage({ namespace: 'acme', name: 'half' }, files({ '1/a': 'x' }), {});
    const other = await store.stage({ namespace: 'other', name: 'n' }, files({ '1/a': 'x' }), {});
    await store.publish(other.key, other.generation, {});
    const op = await store.stage({ namespace: '', name: 'm' }, files({ '1/a': 'x' }), {});
    await store.publish(op.key, op.generation, {});
    mkdirSync(join(root, '.staging/s-00112233445566ff/1'), { recursive: true });
    writeFileSync(join(root, '.staging/s-00112233445566ff/1/a'), 'partial');
    // Foreign entries: in the parent, in the root, and inside the store's own directories.
    writeFileSync(join(p, 'foreign.txt'), 'f');
    mkdirSync(join(p, 'foreign-dir'));
    writeFileSync(join(p, 'foreign-dir', 'g1'), 'f');
    writeFileSync(join(root, 'foreign.txt'), 'f');
    mkdirSync(join(root, '.hidden/g1'), { recursive: true });
    mkdirSync(join(root, 'not a tenant/m/g1'), { recursive: true });
    mkdirSync(join(root, '.staging/not-mine'));
    writeFileSync(join(root, '.staging/s-short'), 'f');
    writeFileSync(join(root, 'acme/m/notes.txt'), 'f');
    mkdirSync(join(root, 'acme/m/g01'));
    mkdirSync(join(root, 'acme/m/gx'));
    writeFileSync(join(root, 'acme/m/g7'), 'a file, not a generation');
    mkdirSync(join(root, '.operator/m/keep-me'));
    mkdirSync(join(p, 'outside/1'), { recursive: true });
    writeFileSync(join(p, 'outside/1/a'), 'outside');
    symlinkSync(join(p, 'outside'), join(root, 'acme/m/g9'));
    symlinkSync(join(p, 'outside'), join(root, '.staging/s-aaaaaaaaaaaaaaaa'));
    // in the blob folder: a temp file a crash left (removed), foreign names (kept)
    writeFileSync(join(root, '.blobs/sha256/.tmp-0123456789abcdef'), 'partial');
    writeFileSync(join(root, '.blobs/sha256/notes.txt'), 'f');
    mkdirSync(join(root, `${blob('dir')}`));

    const fresh = new UploadStore({ root });
    const report = await fresh.recover();
    expect(report.models).toEqual([ACME, { namespace: 'other', name: 'n' }]);
    expect(report.removed.sort()).toEqual([
      '.blobs/sha256/.tmp-0123456789abcdef',
      ...[blob('A'), blob('C')].sort(),
      '.operator/m/CURRENT',
      '.operator/m/g1',
      '.staging/s-00112233445566ff',
      'acme/half/g1',
      'acme/m/CURRENT.tmp-0123456789abcdef',
      'acme/m/g1',
      'acme/m/g3',
    ]);
    expect(tree(p)).toEqual(
      [
        'foreign-dir/',
        'foreign-dir/g1',
        'foreign.txt',
        'outside/',
        'outside/1/',
        'outside/1/a',
        'store/',
        'store/.blobs/',
        'store/.blobs/sha256/',
        ...[`store/${blob('B')}`, `store/${blob('x')}`, `store/${blob('dir')}/`].sort(),
        'store/.blobs/sha256/notes.txt',
        'store/.hidden/',
        'store/.hidden/g1/',
        'store/.operator/',
        'store/.operator/m/',
        'store/.operator/m/keep-me/',
        'store/.staging/',
        'store/.staging/not-mine/',
        'store/.staging/s-aaaaaaaaaaaaaaaa',
        'store/.staging/s-short',
        'store/acme/',
        'store/acme/m/',
        'store/acme/m/CURRENT',
        'store/acme/m/g01/',
        'store/acme/m/g2/',
        'store/acme/m/g2/1/',
        'store/acme/m/g2/1/model.bin',
        'store/acme/m/g7',
        'store/acme/m/g9',
        'store/acme/m/gx/',
        'store/acme/m/notes.txt',
        'store/foreign.txt',
        'store/not a tenant/',
        'store/not a tenant/m/',
        'store/not a tenant/m/g1/',
        'store/other/',
        'store/other/n/',
        'store/other/n/CURRENT',
        'store/other/n/g1/',
        'store/other/n/g1/1/',
        'store/other/n/g1/1/a',
      ].sort(),
    );
    expect(readFileSync(join(p, 'outside/1/a'), 'utf8')).toBe('outside');
    const cur = await fresh.current(ACME);
    expect(cur?.generation).toBe(2);
    expect(cur?.configOverride).toEqual({ v: 'B' });
    // The next generation number is past every one seen (g9 is a foreign symlink, still counted).
    expect((await fresh.stage(ACME, files({ '1/a': 'x' }), {})).generation).toBe(10);
  });

  it('a missing root is not created; a damaged pointer keeps the files and is reported', async () => {
    const p = parent();
    const root = join(p, 'store');
    expect(await new UploadStore({ root }).recover()).toEqual({ removed: [], models: [] });
    expect(existsSync(root)).toBe(false);
    const store = new UploadStore({ root });
    const g = await store.stage(ACME, files({ '1/a': 'x' }), {});
    writeFileSync(join(root, 'acme/m/CURRENT'), 'not json');
    const report = await new UploadStore({ root }).recover();
    expect(report.models).toEqual([ACME]);
    expect(existsSync(g.modelPath)).toBe(true);
    const e = await store.current(ACME).catch((x: unknown) => x as TritonError);
    expect(e).toBeInstanceOf(TritonError);
    expect((e as TritonError).code).toBe('INTERNAL');
    expect((e as TritonError).message).toBe("stored model 'm' is damaged: the pointer file is not JSON");
  });
});

describe('error messages carry no host paths', () => {
  it('an I/O failure is named by its code', async () => {
    const p = parent();
    const root = join(p, 'store');
    mkdirSync(root);
    writeFileSync(join(root, 'acme'), 'a file where the namespace directory belongs');
    const store = new UploadStore({ root });
    const e = (await store.stage(ACME, files({ '1/a': 'x' }), {}).then(
      () => undefined,
      (x: unknown) => x,
    )) as TritonError;
    expect(e).toBeInstanceOf(TritonError);
    expect(e.message).toBe("failed to store the files of model 'm': ENOTDIR");
    expect(e.message).not.toContain(p);
    // The staged copy was removed.
    expect(readdirSync(join(root, '.staging'))).toEqual([]);
  });
});

describe('tenant identity (creation uid) and removal', () => {
  const U1 = '11111111111111111111111111111111';
  const U2 = '22222222222222222222222222222222';

  it('a tenant directory records its owner; strangers are unlisted ids, other uids and unreadable records', async () => {
    const root = join(parent(), 'store');
    const store = new UploadStore({ root });
    /** The strangers under `root` when the tenants file lists `tenants` (id → uid). */
    const strangers = (tenants: Record<string, string | undefined>) => store.strangers(new Map(Object.entries(tenants)));
    expect(await strangers({})).toEqual([]); // no root yet
    await store.publish(ACME, (await store.stage(ACME, files({ '1/a': 'x' }), {}, { owner: { uid: U1 } })).generation, {});
    const BOB: ModelKey = { namespace: 'bob', name: 'b' };
    await store.publish(BOB, (await store.stage(BOB, files({ '1/a': 'x' }), {}, { owner: { uid: undefined } })).generation, {});
    expect(JSON.parse(readFileSync(join(root, 'acme', '.tenant'), 'utf8'))).toEqual({ format: 'warden-tenant/1', uid: U1 });
    expect(existsSync(join(root, 'bob', '.tenant'))).toBe(false); // an entry without uid records none
    expect(await strangers({ acme: U1, bob: undefined })).toEqual([]);
    expect(await strangers({ acme: U2, bob: undefined })).toEqual(['acme']);
    expect(await strangers({ acme: undefined, bob: U1 })).toEqual(['acme', 'bob']);
    expect(await strangers({ bob: undefined })).toEqual(['acme']);
    writeFileSync(join(root, 'acme', '.tenant'), 'garbage');
    expect(await strangers({ acme: U1, bob: undefined })).toEqual(['acme']);
  });

  it("an upload into an earlier tenant's directory is refused (UNAVAILABLE) and writes nothing there", async () => {
    const root = join(parent(), 'store');
    const store = new UploadStore({ root });
    await store.publish(ACME, (await store.stage(ACME, files({ '1/a': 'old' }), {}, { owner: { uid: U1 } })).generation, {});
    const before = tree(root);
    const e = await store.stage({ namespace: 'acme', name: 'n' }, files({ '1/a': 'new' }), {}, { owner: { uid: U2 } }).then(
      () => undefined,
      (x: unknown) => x as TritonError,
    );
    expect(e?.code).toBe('UNAVAILABLE');
    expect(e?.message).not.toContain(root);
    expect(tree(root)).toEqual(before);
  });

  it('quarantine moves the whole tenant directory under .removed/ in one rename; a new directory starts empty', async () => {
    const root = join(parent(), 'store');
    const store = new UploadStore({ root });
    await store.publish(ACME, (await store.stage(ACME, files({ '1/a': 'x' }), {}, { owner: { uid: U1 } })).generation, {});
    expect(await store.quarantine('nobody')).toBeUndefined();
    const moved = await store.quarantine('acme');
    expect(moved).toMatch(/^\.removed\/acme-\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    expect(existsSync(join(root, 'acme'))).toBe(false);
    expect(readFileSync(join(root, moved!, 'm', 'g1', '1', 'a'), 'utf8')).toBe('x');
    expect(await store.current(ACME)).toBeUndefined();
    expect(await store.list()).toEqual([]);
    // recovery never touches the quarantine
    expect((await store.recover()).models).toEqual([]);
    expect(existsSync(join(root, moved!, 'm', 'CURRENT'))).toBe(true);
    await store.stage(ACME, files({ '1/a': 'y' }), {}, { owner: { uid: U2 } });
    expect(JSON.parse(readFileSync(join(root, 'acme', '.tenant'), 'utf8')).uid).toBe(U2);
    await expect(store.quarantine('')).rejects.toThrow(/operator/);
  });
});

describe('which namespace holds a blob (uploads by digest, docs/tenancy.md "Uploads by digest")', () => {
  const sha = (content: string): string => createHash('sha256').update(content).digest('hex');

  it("holdsBlob: a namespace holds what its own generations link, never another tenant's; the operator holds every blob", async () => {
    const store = new UploadStore({ root: join(parent(), 'store') });
    const component = 'acme component bytes';
    const g = await store.stage(ACME, files({ '1/model.wasm': component }), {});
    expect(g.digests).toEqual(new Map([['1/model.wasm', sha(component)]]));
    await store.publish(ACME, g.generation, {});
    expect(await store.holdsBlob('acme', sha(component))).toBe(true);
    expect(await store.holdsBlob('bob', sha(component))).toBe(false);
    expect(await store.holdsBlob('', sha(component))).toBe(true);
    expect(await store.holdsBlob('acme', sha('never uploaded'))).toBe(false);
    expect(await store.holdsBlob('acme', '../../etc/passwd')).toBe(false);
    expect(await store.holdsBlob('acme', sha(component).toUpperCase())).toBe(false);
    const held = await store.heldBlob('acme', sha(component));
    expect(held).toEqual({ sha256: sha(component), size: component.length });
    expect(await store.heldBlob('bob', sha(component))).toBeUndefined();
    // a load naming it links the same blob, reading nothing
    const m2 = { namespace: 'acme', name: 'm2' };
    const g2 = await store.stage(m2, new Map(), {}, { blobs: new Map([['1/model.wasm', held!]]) });
    expect(g2.digests).toEqual(new Map([['1/model.wasm', sha(component)]]));
    expect(statSync(join(g2.modelPath, '1/model.wasm')).ino).toBe(statSync(join(g.modelPath, '1/model.wasm')).ino);
    await store.discard(g2);
    // deleted: the blob goes with the last generation linking it, and a load naming it is refused
    await store.forget(ACME);
    await store.prune(ACME, new Set(), 'tenant');
    expect(await store.holdsBlob('acme', sha(component))).toBe(false);
    expect(await store.heldBlob('acme', sha(component))).toBeUndefined();
    await expect(store.stage(m2, new Map(), {}, { blobs: new Map([['1/model.wasm', held!]]) })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it("a load of many files reads the tenant's own files once, not once per file (one tenant cannot multiply the store's work by its file count)", async () => {
    const store = new UploadStore({ root: join(parent(), 'store') });
    const g = await store.stage(ACME, files({ '1/a': 'held a', '1/b': 'held b' }), {});
    await store.publish(ACME, g.generation, {});
    const walks: string[] = [];
    const holdings = store.holdings.bind(store);
    store.holdings = (namespace: string) => (walks.push(namespace), holdings(namespace));
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`1/f${i}`, `file ${i}`]));
    const g2 = await store.stage({ namespace: 'acme', name: 'm2' }, files({ ...many, '1/again': 'held a' }), {});
    expect(g2.digests?.size).toBe(41);
    expect(walks).toEqual(['acme']);
    // one reading answers for every digest, own and not
    const h = await holdings('acme');
    expect(await h.holds(sha('held a'))).toBe(true);
    expect(await h.holds(sha('file 7'))).toBe(true); // staged above, not yet published: a generation being staged counts
    expect(await h.holds(sha('never uploaded'))).toBe(false);
    expect(await (await holdings('bob')).holds(sha('held a'))).toBe(false);
  });

  it('heldBlob: a blob changed in place counts as gone, also after an earlier verification was remembered', async () => {
    const store = new UploadStore({ root: join(parent(), 'store') });
    const g = await store.stage(ACME, files({ '1/model.wasm': 'original bytes' }), {});
    const file = join(g.modelPath, '1/model.wasm');
    // settled: its verification is remembered (the blob is not read again while unchanged)
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    expect(await store.heldBlob('acme', sha('original bytes'))).toBeDefined();
    writeFileSync(file, 'changed bytes!'); // the same size; the mtime moves
    expect(await store.holdsBlob('acme', sha('original bytes'))).toBe(true);
    expect(await store.heldBlob('acme', sha('original bytes'))).toBeUndefined();
  });

  it("a sweep while an upload writes its blob leaves the write's temp file alone (another model's unload may sweep at any moment)", async () => {
    const dir = join(parent(), 'blobs-race');
    const blobs = new UploadBlobs(dir, async () => undefined);
    await blobs.place(join(dir, '..', 'first'), new Uint8Array(Buffer.from('makes the folder')), false);
    // the sweep runs right after the temp file is written, before it becomes the blob
    const internals = blobs as unknown as { writeTemp(data: Uint8Array): Promise<string> };
    const writeTemp = internals.writeTemp.bind(blobs);
    const swept: string[][] = [];
    internals.writeTemp = async (data) => {
      const tmp = await writeTemp(data);
      swept.push(await blobs.sweep());
      return tmp;
    };
    for (const own of [false, true]) {
      const r = await blobs.place(join(dir, '..', `dest-${own}`), new Uint8Array(Buffer.from(`new bytes ${own}`)), own);
      expect(r.written).toBe(true);
      expect(readFileSync(join(dir, '..', `dest-${own}`), 'utf8')).toBe(`new bytes ${own}`);
    }
    expect(swept).toEqual([[], []]);
    // a temp file nobody writes (a crash's leftover) is still swept
    writeFileSync(join(dir, '.tmp-0123456789abcdef'), 'left by a crash');
    expect(await blobs.sweep()).toEqual(['.tmp-0123456789abcdef']);
  });

  it("bytes only another tenant holds cost the same writes and fsyncs as new bytes, and are still stored once; a tenant's own known bytes write nothing", async () => {
    const dir = join(parent(), 'blobs');
    let fsyncs = 0;
    const blobs = new UploadBlobs(dir, async () => {
      fsyncs++;
    });
    const data = new Uint8Array(Buffer.from('component bytes'));
    const place = async (name: string, own: boolean) => {
      fsyncs = 0;
      const r = await blobs.place(join(dir, '..', name), data, own);
      return { ...r, fsyncs };
    };
    await blobs.place(join(dir, '..', 'first'), new Uint8Array(Buffer.from('other content')), false); // makes the folder
    const fresh = await place('a', false);
    expect(fresh.written).toBe(true);
    const other = await place('b', false); // the blob exists (another tenant's): the same work
    expect(other.written).toBe(false);
    expect(other.fsyncs).toBe(fresh.fsyncs);
    expect(other.fsyncs).toBeGreaterThan(0);
    const own = await place('c', true); // the tenant's own blob: linked, nothing written
    expect(own.fsyncs).toBe(0);
    // one blob, three links besides its name; no temp file left
    expect(readdirSync(dir).sort()).toEqual([fresh.hash, sha('other content')].sort());
    expect(statSync(join(dir, fresh.hash)).nlink).toBe(4);
  });
});
