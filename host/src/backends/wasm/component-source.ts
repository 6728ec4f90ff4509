/**
 * A model version's component as the `wasm` backend hands it to an engine (../engine.ts
 * `CompileInput`): its SHA-256, its checked import/export surface, the linear memories it
 * defines, and its bytes on demand.
 *
 * The first time a component file is seen it is read, checked against the sandbox world
 * (`checkComponent`), its memories counted (`definedMemories`) and hashed; with a digest memo
 * (./digests.ts) the surface and the count are recorded with the digest, under the memo's MAC, as
 * its facts. When the memo later vouches that the file is unchanged and has those facts, the file
 * is not read at all: the recorded surface is checked again against the sandbox world as this host
 * defines it now, and an engine whose compile cache holds the hash never needs the bytes (issue
 * 10: the first load of a cached component). If an engine does need them, they are read then:
 * if the file's stamps are still those the memo vouched for they are the digest's bytes (the
 * memo's own argument, ./digests.ts); otherwise they must hash to the recorded digest.
 */
import { createHash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { stat } from 'node:fs/promises';
import * as err from './sandbox.errors.js';
import { definedMemories } from './binary.js';
import { checkComponent, checkSurface, refusingMalformed, type ComponentItem, type ComponentSurface } from './component-check.js';
import { stamps, type ComponentDigests } from './digests.js';

/** What an engine is given about a component besides the limits (see `CompileInput`). */
export interface ComponentSource {
  /** SHA-256 of the component, hex. */
  hash: string;
  /** Its top-level imports and exports; passed `checkSurface` in this process. */
  surface: ComponentSurface;
  /** Linear memories its core modules define. */
  memories: number;
  /**
   * The component bytes (read at most once).
   * @throws TritonError UNAVAILABLE if the file no longer hashes to {@link hash}, or the reader's
   *   own error (e.g. NOT_FOUND)
   */
  bytes(): Promise<Uint8Array>;
  /** Whether the file was read and checked now (`file`) or its facts came from the memo (`memo`). */
  from: 'file' | 'memo';
}

/** The facts recorded in the digest memo beside a component's digest. */
interface ComponentFacts {
  surface: ComponentSurface;
  memories: number;
}

/** Format tag of the facts line; a line with another is ignored (the file is read and checked). */
const FACTS_VERSION = 1;

/** The facts as one line (JSON never writes a raw line break). */
function factsLine(f: ComponentFacts): string {
  return JSON.stringify({ v: FACTS_VERSION, memories: f.memories, surface: f.surface });
}

function str(x: unknown): x is string {
  return typeof x === 'string';
}

/** A recorded surface item, rebuilt from known fields only; undefined if malformed. */
function itemOf(x: unknown): ComponentItem | undefined {
  const o = x as { name?: unknown; kind?: unknown; members?: unknown } | null;
  if (!o || typeof o !== 'object' || !str(o.name) || !str(o.kind)) return undefined;
  if (o.members === undefined) return { name: o.name, kind: o.kind };
  if (!Array.isArray(o.members)) return undefined;
  const members = [];
  for (const m of o.members as Array<{ name?: unknown; kind?: unknown } | null>) {
    if (!m || typeof m !== 'object' || !str(m.name) || !str(m.kind)) return undefined;
    members.push({ name: m.name, kind: m.kind });
  }
  return { name: o.name, kind: o.kind, members };
}

function itemsOf(x: unknown): ComponentItem[] | undefined {
  if (!Array.isArray(x)) return undefined;
  const out: ComponentItem[] = [];
  for (const i of x) {
    const item = itemOf(i);
    if (!item) return undefined;
    out.push(item);
  }
  return out;
}

/** Parses a facts line; undefined for anything but a well-formed one of {@link FACTS_VERSION}. */
export function parseFacts(line: string): ComponentFacts | undefined {
  let f: { v?: unknown; memories?: unknown; surface?: { imports?: unknown; exports?: unknown } };
  try {
    f = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!f || typeof f !== 'object' || f.v !== FACTS_VERSION) return undefined;
  if (typeof f.memories !== 'number' || !Number.isSafeInteger(f.memories) || f.memories < 0) return undefined;
  if (!f.surface || typeof f.surface !== 'object') return undefined;
  const imports = itemsOf(f.surface.imports);
  const exports = itemsOf(f.surface.exports);
  if (!imports || !exports) return undefined;
  return { surface: { imports, exports }, memories: f.memories };
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/**
 * The component at `path` (whose stat, taken just before, is `st`), checked.
 * @param read reads the file (bounded by the caller: `st.size` was checked), throwing the
 *   caller's error for a file that cannot be read
 * @param digests the digest memo, if any: without one the file is always read and hashed
 * @param known the file's SHA-256 (hex) as a trusted part of the server computed it (the upload
 *   store, for a file it has just stored: `ModelOrigin.digests`): not hashed again; with facts
 *   recorded for that digest in this process, the file is not read unless an engine needs the
 *   bytes, and then they must hash to it
 * @throws TritonError INVALID_ARG for a refused or malformed component (from the file or a
 *   recorded surface that the sandbox world no longer allows), `read`'s errors
 */
export async function componentSource(
  path: string,
  st: BigIntStats,
  what: string,
  read: () => Promise<Uint8Array>,
  digests?: ComponentDigests,
  known?: string,
): Promise<ComponentSource> {
  if (known !== undefined) {
    const facts = parseFacts(digests?.factsOf(known) ?? '');
    if (facts) {
      const surface = checkSurface(facts.surface, what);
      let bytes: Promise<Uint8Array> | undefined;
      const readChecked = async () => {
        const b = await read();
        if (sha256(b) !== known) throw err.componentChanged(what);
        return b;
      };
      return { hash: known, surface, memories: facts.memories, bytes: () => (bytes ??= readChecked()), from: 'memo' };
    }
    const bytes = await read();
    const surface = checkComponent(bytes, what);
    const memories = refusingMalformed(what, () => definedMemories(bytes));
    digests?.recordFacts(known, factsLine({ surface, memories }));
    return { hash: known, surface, memories, bytes: () => Promise.resolve(bytes), from: 'file' };
  }
  const memo = digests ? await digests.lookup(path, st) : undefined;
  const facts = memo ? parseFacts(memo.facts) : undefined;
  if (memo && facts) {
    const surface = checkSurface(facts.surface, what);
    const hash = memo.hash;
    let bytes: Promise<Uint8Array> | undefined;
    // the memo vouched for the file as of `st`: bytes read while its stamps still equal `st`'s
    // are those the digest was taken of; otherwise they must hash to it
    const readChecked = async () => {
      const b = await read();
      const now = await stat(path, { bigint: true }).catch(() => undefined);
      const unchanged = now !== undefined && stamps(now) === stamps(st) && BigInt(b.length) === st.size;
      if (!unchanged && sha256(b) !== hash) throw err.componentChanged(what);
      return b;
    };
    return { hash, surface, memories: facts.memories, bytes: () => (bytes ??= readChecked()), from: 'memo' };
  }
  const bytes = await read();
  const surface = checkComponent(bytes, what);
  const memories = refusingMalformed(what, () => definedMemories(bytes));
  const hash = digests ? await digests.sha256(path, st, bytes, factsLine({ surface, memories })) : sha256(bytes);
  return { hash, surface, memories, bytes: () => Promise.resolve(bytes), from: 'file' };
}
