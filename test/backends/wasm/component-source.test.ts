/**
 * How the wasm backend obtains a component (host/src/backends/wasm/component-source.ts, so that the
 * first load of a cached component skips reading it): the first time the file is read, checked and hashed, and
 * its checked surface and memory count are recorded in the digest memo under its MAC; afterwards
 * an unchanged file is not read at all — its recorded surface is checked again against the
 * sandbox world, and its bytes are read only if an engine asks (and must still hash to the
 * recorded digest). Forged, foreign-key, stale or malformed facts lead to reading and checking
 * the file. Also: the TypeScript memory count equals the wasmtime addon's on every fixture.
 */
import { createHash, createHmac } from 'node:crypto';
import { copyFileSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definedMemories, encodeUleb } from '../../../host/src/backends/wasm/binary.js';
import { componentSource, parseFacts } from '../../../host/src/backends/wasm/component-source.js';
import { ComponentDigests } from '../../../host/src/backends/wasm/digests.js';
import { wasmtimeNative } from '../../../host/src/backends/wasm/wasmtime/native.js';
import { sleep } from '../../helpers/wait.js';
import * as h from './helpers.js';

const BUILD = join(h.FIXTURES, 'build');
const SETTLE = 50;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

let work: string;
beforeAll(async () => {
  await h.ensureBuilt();
  work = mkdtempSync(join(tmpdir(), 'warden-source-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A settled copy of fixture `fixture` and a memo folder of its own. */
async function setup(name: string, fixture = 'identity'): Promise<{ file: string; memo: string }> {
  const file = join(work, `${name}.wasm`);
  copyFileSync(join(BUILD, `${fixture}.wasm`), file);
  await sleep(SETTLE + 20);
  return { file, memo: join(work, `${name}-memo`) };
}

/** componentSource over `file` with a reader that counts its calls. */
async function source(file: string, memo: string, reader?: () => Promise<Uint8Array>) {
  const reads = { n: 0 };
  const read = async () => {
    reads.n++;
    return reader ? reader() : readFile(file);
  };
  const digests = new ComponentDigests(memo, { settleMs: SETTLE });
  const src = await componentSource(file, await stat(file, { bigint: true }), 'model.wasm', read, digests);
  return { src, reads, digests };
}

/** Rewrites the memo's one entry with `facts`, MAC'd under `key` (the memo's own key by default). */
function rewriteEntry(memo: string, facts: (old: string) => string, key = readFileSync(join(memo, '.key'))): void {
  const entry = join(
    memo,
    readdirSync(memo).find((n) => n.endsWith('.digest'))!,
  );
  const [stamps, hash, old] = readFileSync(entry, 'latin1').split('\n');
  const body = `${stamps}\n${hash}\n${facts(old!)}`;
  writeFileSync(entry, `${body}\n${createHmac('sha256', key).update(body).digest('hex')}\n`);
}

describe('component source', () => {
  it('reads and checks the file once; a later load (new process) reads nothing, with the same hash, surface and memory count', async () => {
    const { file, memo } = await setup('a');
    const first = await source(file, memo);
    expect(first.src.from).toBe('file');
    expect(first.reads.n).toBe(1);
    expect(first.src.hash).toBe(sha(readFileSync(file)));
    const second = await source(file, memo);
    expect(second.src.from).toBe('memo');
    expect(second.reads.n).toBe(0);
    expect(second.src.hash).toBe(first.src.hash);
    expect(second.src.surface).toEqual(first.src.surface);
    expect(second.src.memories).toBe(first.src.memories);
    expect(second.digests.counts).toEqual({ memo: 1, hashed: 0 });
    // an engine that needs the bytes gets them, read once, checked against the digest
    const [b1, b2] = await Promise.all([second.src.bytes(), second.src.bytes()]);
    expect(b1).toBe(b2);
    expect(second.reads.n).toBe(1);
    expect(sha(b1)).toBe(first.src.hash);
  });

  it('bytes that no longer hash to the recorded digest are refused with UNAVAILABLE', async () => {
    const { file, memo } = await setup('b');
    await source(file, memo);
    const { src } = await source(file, memo, async () => Buffer.from('other bytes'));
    expect(src.from).toBe('memo');
    await expect(src.bytes()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/changed while it was being loaded/) });
  });

  it('a file changed after the memo vouched for it, before an engine asked for the bytes, is refused with UNAVAILABLE', async () => {
    const { file, memo } = await setup('b2');
    await source(file, memo);
    const { src } = await source(file, memo);
    expect(src.from).toBe('memo');
    copyFileSync(join(BUILD, 'echo_meta.wasm'), file);
    await expect(src.bytes()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('a changed file is read and checked again (the memo entry is stale)', async () => {
    const { file, memo } = await setup('c');
    await source(file, memo);
    copyFileSync(join(BUILD, 'echo_meta.wasm'), file);
    const { src, reads } = await source(file, memo);
    expect(src.from).toBe('file');
    expect(reads.n).toBe(1);
    expect(src.hash).toBe(sha(readFileSync(join(BUILD, 'echo_meta.wasm'))));
  });

  it('facts forged without the key (or under another key) are ignored: the file is read and checked', async () => {
    const { file, memo } = await setup('d');
    await source(file, memo);
    rewriteEntry(memo, (old) => old.replace('"memories":', '"memories":1'), Buffer.alloc(32, 9));
    const { src, reads } = await source(file, memo);
    expect(src.from).toBe('file');
    expect(reads.n).toBe(1);
    // and the entry was recorded again, so the next load reads nothing
    expect((await source(file, memo)).src.from).toBe('memo');
  });

  it('a recorded surface is checked against the sandbox world again: one that imports wasi:filesystem is refused, naming it', async () => {
    const { file, memo } = await setup('e');
    await source(file, memo);
    // what a memo written by an older host with a wider allow-list could hold (MAC'd with the key)
    rewriteEntry(memo, (old) => {
      const f = JSON.parse(old);
      f.surface.imports.push({ name: 'wasi:filesystem/types@0.2.0', kind: 'instance', members: [] });
      return JSON.stringify(f);
    });
    await expect(source(file, memo)).rejects.toMatchObject({ code: 'INVALID_ARG', message: expect.stringContaining('wasi:filesystem/types@0.2.0') });
  });

  it.each([
    ['not JSON', '{'],
    ['another format version', '{"v":2,"memories":1,"surface":{"imports":[],"exports":[]}}'],
    ['a negative memory count', '{"v":1,"memories":-1,"surface":{"imports":[],"exports":[]}}'],
    ['a fractional memory count', '{"v":1,"memories":0.5,"surface":{"imports":[],"exports":[]}}'],
    ['imports that are not a list', '{"v":1,"memories":1,"surface":{"imports":{},"exports":[]}}'],
    ['a member without a name', '{"v":1,"memories":1,"surface":{"imports":[{"name":"x","kind":"instance","members":[{"kind":"func"}]}],"exports":[]}}'],
    ['null', 'null'],
    ['no facts (an entry recorded by the digest API alone)', ''],
  ])('malformed facts (%s), even under the right MAC, mean reading and checking the file', async (_what, facts) => {
    const name = `f-${_what.replace(/\W+/g, '-')}`;
    const { file, memo } = await setup(name);
    await source(file, memo);
    rewriteEntry(memo, () => facts);
    if (facts !== '') expect(parseFacts(facts)).toBeUndefined();
    const { src, reads } = await source(file, memo);
    expect(src.from).toBe('file');
    expect(reads.n).toBe(1);
  });

  it('without a digest memo every load reads and hashes the file', async () => {
    const { file } = await setup('g');
    let reads = 0;
    const src = await componentSource(file, await stat(file, { bigint: true }), 'model.wasm', async () => {
      reads++;
      return readFile(file);
    });
    expect(src.from).toBe('file');
    expect(reads).toBe(1);
    expect(src.hash).toBe(sha(readFileSync(file)));
  });
});

describe('component source with a known digest (an upload: the upload store hashed the bytes it stored)', () => {
  /** componentSource of a new hard link to `file` (its ctime moves, so the memo's stamps never match) given `known`. */
  async function linked(file: string, digests: ComponentDigests, known: string, reader?: () => Promise<Uint8Array>) {
    const copy = join(work, `link-${Math.random().toString(16).slice(2)}.wasm`);
    linkSync(file, copy);
    const reads = { n: 0 };
    const read = async () => {
      reads.n++;
      return reader ? reader() : readFile(copy);
    };
    const src = await componentSource(copy, await stat(copy, { bigint: true }), 'model.wasm', read, digests, known);
    return { src, reads };
  }

  it('is not hashed; once its facts are known in this process, a new link to the same bytes is not read at all', async () => {
    const { file, memo } = await setup('k');
    const digests = new ComponentDigests(memo, { settleMs: SETTLE });
    const known = sha(readFileSync(file));
    const first = await linked(file, digests, known);
    expect(first.src.from).toBe('file');
    expect(first.reads.n).toBe(1);
    expect(first.src.hash).toBe(known);
    expect(first.src.memories).toBeGreaterThan(0);
    const second = await linked(file, digests, known);
    expect(second.src.from).toBe('memo');
    expect(second.reads.n).toBe(0);
    expect(second.src.surface).toEqual(first.src.surface);
    expect(second.src.memories).toBe(first.src.memories);
    expect(digests.counts.hashed).toBe(0);
    // an engine that needs the bytes gets them checked against the known digest
    expect(sha(await second.src.bytes())).toBe(known);
  });

  it('bytes that do not hash to the known digest are refused when an engine needs them', async () => {
    const { file, memo } = await setup('k2');
    const digests = new ComponentDigests(memo, { settleMs: SETTLE });
    const known = sha(readFileSync(file));
    await linked(file, digests, known);
    const { src } = await linked(file, digests, known, async () => Buffer.from('other bytes'));
    await expect(src.bytes()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/changed while it was being loaded/) });
  });

  it('a refused component is refused with a known digest too (its check runs on first sight)', async () => {
    const { file, memo } = await setup('k3', 'import_filesystem');
    const digests = new ComponentDigests(memo, { settleMs: SETTLE });
    await expect(linked(file, digests, sha(readFileSync(file)))).rejects.toMatchObject({ code: 'INVALID_ARG' });
  });
});

describe('definedMemories', () => {
  const fixtures = () =>
    readdirSync(BUILD)
      .filter((n) => n.endsWith('.wasm'))
      .map((n) => join(BUILD, n));
  const samples = ['identity_wasm', 'add_sub_wasm', 'repeat_wasm', 'preprocess_wasm'].map((m) => join(h.REPO, m, '1', 'model.wasm'));

  it('counts what the wasmtime addon counts, on every fixture and sample component', () => {
    let native;
    try {
      native = wasmtimeNative();
    } catch {
      console.warn('definedMemories parity: the native addon is not built here; only the TypeScript count is checked');
    }
    for (const f of [...fixtures(), ...samples]) {
      const bytes = readFileSync(f);
      const n = definedMemories(bytes);
      if (samples.includes(f)) expect(n, f).toBeGreaterThanOrEqual(1);
      if (native) expect(n, f).toBe(native.countMemories(bytes));
    }
  });

  it('refuses malformed binaries and adversarial nesting', () => {
    expect(() => definedMemories(Buffer.from('not wasm at all'))).toThrow(/not a WebAssembly/);
    const id = readFileSync(join(BUILD, 'identity.wasm'));
    expect(() => definedMemories(id.subarray(0, id.length - 3))).toThrow(/overruns|unexpected end/);
    // a component nesting components 40 deep: section 4 holding a whole component, recursively
    let c = Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]);
    for (let i = 0; i < 40; i++) c = Buffer.concat([c.subarray(0, 8), Buffer.from([0x04, ...encodeUleb(c.length)]), c]);
    expect(() => definedMemories(c)).toThrow(/nested deeper/);
  });
});
