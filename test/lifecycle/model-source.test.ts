/**
 * The lifecycle over a source of its own (lifecycle/model-source.ts): a store that is neither the
 * repository on disk nor the upload store — files held in memory and written to a local directory
 * when a load opens them, as an object store's would be — plugs into the lifecycle and the version
 * builder unchanged. The states a load, a failed load, a reload and an unload leave, and when the
 * lifecycle hands files back to their source.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { TritonError, internal, invalidArg } from '../../host/src/contract/errors.js';
import { NO_SERVER } from '../../host/src/contract/load-context.js';
import type { ModelKey, ModelOrigin } from '../../host/src/contract/types.js';
import { ServerAdmission } from '../../host/src/lifecycle/admission.js';
import { ModelLifecycle } from '../../host/src/lifecycle/lifecycle.js';
import type { LoadOptions, LocatedModel, ModelFiles, ModelSource } from '../../host/src/lifecycle/model-source.js';
import { VersionBuilder } from '../../host/src/lifecycle/version-builder.js';
import { ServerMetrics } from '../../host/src/metrics/prometheus.js';
import { JsBackendResolver, echoConfig } from '../helpers/js-backend.js';

/** One stored model: its files (relative path → text) and the object's version tag. */
interface StoredObject {
  etag: string;
  files: Record<string, string>;
}

/** An object-store-like source: every open writes the object's files under a fresh local directory. */
class MemorySource implements ModelSource {
  readonly objects = new Map<string, StoredObject>();
  /** Directories written by opens and not yet handed back (open, then released or abandoned). */
  readonly live = new Set<string>();
  readonly abandoned: string[] = [];
  readonly cleanUps: { key: ModelKey; forget: boolean }[] = [];
  /** Makes the next open fail with this error (the store unreachable). */
  failNextOpen: TritonError | undefined;
  private waiters: (() => void)[] = [];
  private readonly root = mkdtempSync(join(tmpdir(), 'warden-memsource-'));
  private readonly origin: ModelOrigin = { kind: 'repository', repository: 'mem://bucket' };

  async locate(key: ModelKey, request: LoadOptions): Promise<LocatedModel | undefined> {
    if (key.name === 'refused') throw invalidArg(`failed to load '${key.name}': refused by the store`);
    const object = key.namespace === '' ? this.objects.get(key.name) : undefined;
    if (!object) return undefined;
    return { origin: this.origin, open: async () => this.open(key, object, request) };
  }

  async holds(key: ModelKey): Promise<boolean> {
    return key.namespace === '' && this.objects.has(key.name);
  }

  async cleanUp(key: ModelKey, forget: boolean): Promise<void> {
    this.cleanUps.push({ key, forget });
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves at the next {@link cleanUp}. */
  nextCleanUp(): Promise<void> {
    return new Promise((r) => this.waiters.push(r));
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }

  private async open(key: ModelKey, object: StoredObject, request: LoadOptions): Promise<ModelFiles> {
    const failure = this.failNextOpen;
    this.failNextOpen = undefined;
    if (failure) throw failure;
    const modelPath = join(this.root, `${object.etag}-${this.live.size}-${this.abandoned.length}-${this.cleanUps.length}`, key.name);
    for (const [rel, text] of Object.entries(object.files)) {
      mkdirSync(dirname(join(modelPath, rel)), { recursive: true });
      writeFileSync(join(modelPath, rel), text);
    }
    this.live.add(modelPath);
    return {
      source: this,
      origin: this.origin,
      modelPath,
      configOverride: request.configOverride,
      stamp: object.etag,
      commit: async () => undefined,
      abandon: async () => {
        this.live.delete(modelPath);
        this.abandoned.push(modelPath);
      },
      release: () => this.live.delete(modelPath),
      publicError: (e) => e,
    };
  }
}

const echo = (versions: number[], extra = ''): StoredObject['files'] =>
  Object.fromEntries([['config.pbtxt', echoConfig(extra)], ...versions.map((v) => [`${v}/.keep`, ''])]);

let source: MemorySource | undefined;
afterEach(() => source?.remove());

function lifecycleOver(s: MemorySource): ModelLifecycle {
  const builder = new VersionBuilder({
    resolvers: [new JsBackendResolver()],
    autoCompleteConfig: true,
    admission: new ServerAdmission(),
    metrics: new ServerMetrics(),
    multiTenant: false,
    server: () => NO_SERVER,
    prepareSteps: async () => undefined,
  });
  return new ModelLifecycle({ logger: pino({ level: 'silent' }), sources: [s], builder });
}

const states = (lc: ModelLifecycle, key: ModelKey) => [...(lc.entry(key)?.slots ?? [])].map(([v, s]) => [v, s.state, s.reason]);

describe('the lifecycle over a source of its own', () => {
  it('loads, reloads (the old files handed back once their versions retired) and unloads', async () => {
    source = new MemorySource();
    const lc = lifecycleOver(source);
    const m = { namespace: '', name: 'm' };
    source.objects.set('m', { etag: 'a', files: echo([1]) });
    await lc.load(m);
    expect(states(lc, m)).toEqual([[1, 'READY', '']]);
    expect(lc.getVersion(m, -1).version).toBe(1);
    expect(lc.entry(m)?.files?.stamp).toBe('a');
    expect(lc.allReady()).toBe(true);
    const first = [...source.live];

    source.objects.set('m', { etag: 'b', files: echo([1, 2], 'version_policy { all { } }') });
    const cleaned = source.nextCleanUp();
    await lc.load(m);
    expect(states(lc, m)).toEqual([
      [1, 'READY', ''],
      [2, 'READY', ''],
    ]);
    expect(lc.entry(m)?.files?.stamp).toBe('b');
    await cleaned;
    expect(source.cleanUps).toEqual([{ key: m, forget: false }]);
    expect(source.live.has(first[0]!)).toBe(false);
    expect(source.live.size).toBe(1);

    const unloaded = source.nextCleanUp();
    await lc.unload(m, { deleteFiles: true });
    expect(states(lc, m)).toEqual([
      [1, 'UNLOADING', ''],
      [2, 'UNLOADING', ''],
    ]);
    expect(lc.holdsName(m)).toBe(false);
    await unloaded;
    expect(states(lc, m)).toEqual([
      [1, 'UNAVAILABLE', 'unloaded'],
      [2, 'UNAVAILABLE', 'unloaded'],
    ]);
    expect(source.cleanUps.at(-1)).toEqual({ key: m, forget: true });
    expect(source.live.size).toBe(0);
    expect(lc.isKnown(m)).toBe(true);
    expect(() => lc.getVersion(m, 1)).toThrow("Request for unknown model: 'm' version 1 is not at ready state");
  });

  it('a failed open or build leaves the model UNAVAILABLE with the reason, or what served in place', async () => {
    source = new MemorySource();
    const lc = lifecycleOver(source);
    const m = { namespace: '', name: 'm' };
    source.objects.set('m', { etag: 'a', files: echo([1]) });
    source.failNextOpen = internal('the bucket is unreachable');
    await expect(lc.load(m)).rejects.toThrow('the bucket is unreachable');
    expect(states(lc, m)).toEqual([[1, 'UNAVAILABLE', 'the bucket is unreachable']]);
    expect(lc.allReady()).toBe(false);
    expect(lc.holdsName(m)).toBe(true);

    await lc.load(m);
    expect(states(lc, m)).toEqual([[1, 'READY', '']]);
    const serving = [...source.live];
    // A reload whose config does not parse: abandoned, the old version and its files stay.
    source.objects.set('m', { etag: 'b', files: { ...echo([1, 2], 'version_policy { all { } }'), 'config.pbtxt': 'max_batch_size: "x"' } });
    await expect(lc.load(m)).rejects.toThrow(TritonError);
    expect(states(lc, m)).toEqual([[1, 'READY', '']]);
    expect(source.abandoned).toHaveLength(1);
    expect([...source.live]).toEqual(serving);
    expect(lc.entry(m)?.files?.stamp).toBe('a');
  });

  it('a refusal changes nothing; a model no source holds fails as Triton answers', async () => {
    source = new MemorySource();
    const lc = lifecycleOver(source);
    for (const [name, message] of [
      ['refused', "failed to load 'refused': refused by the store"],
      ['nowhere', "failed to load 'nowhere', failed to poll from model repository"],
    ] as const) {
      const key = { namespace: '', name };
      const loading = lc.load(key);
      const chain = lc.entry(key)!.chain;
      await expect(loading).rejects.toThrow(message);
      await chain;
      expect(lc.entry(key)).toBeUndefined();
      expect(lc.isKnown(key)).toBe(false);
    }
    expect(source.live.size).toBe(0);
  });
});
