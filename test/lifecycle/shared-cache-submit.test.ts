/**
 * `ModelVersion.submit` with a shared response cache (Redis, `ResponseCacheStore.shared`): the
 * lookup settles after `submit` returns; a hit answers without executing, a miss is queued and
 * its response inserted; the request counts as in flight during the lookup (retire waits for it),
 * and a refusal after the miss reaches the sender. Keys use the scope the builder derived from
 * the files (`ModelVersionOptions.cacheScope`) only when the cache is shared.
 */
import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../host/src/cache/response-cache.js';
import type { ResponseCacheStore } from '../../host/src/cache/response-cache-store.js';
import type { InferenceResponse } from '../../host/src/contract/types.js';
import { collector, config, echoInit, ECHO, FakeInstance, modelVersion, tick } from '../helpers/model-version.js';

/** A shared store whose lookups the test settles by hand. */
class ManualSharedStore implements ResponseCacheStore {
  readonly shared = true;
  readonly lookups: { tenant: string; key: string; settle: (r: InferenceResponse | undefined) => void }[] = [];
  readonly inserted: { tenant: string; key: string; response: InferenceResponse }[] = [];
  get(tenant: string, key: string): Promise<InferenceResponse | undefined> {
    return new Promise((settle) => this.lookups.push({ tenant, key, settle }));
  }
  set(tenant: string, key: string, response: InferenceResponse): void {
    this.inserted.push({ tenant, key, response });
  }
  dropTenant(): void {}
}

const CACHED = config(`${ECHO}\nresponse_cache { enable: true }\n`);
const HIT: InferenceResponse = { outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 4], data: new Uint8Array(16).fill(9) }] };

describe('submit with a shared cache', () => {
  it('a miss is queued once the lookup settles and its response inserted; a hit answers without executing', async () => {
    const store = new ManualSharedStore();
    const instance = new FakeInstance();
    const { mv, stats } = modelVersion(CACHED, [instance], { responseCache: store, cacheScope: 'files-and-config' });
    const miss = collector();
    const request = mv.submit(echoInit('r1'), miss.sender);
    await tick();
    expect(instance.executions).toEqual([]); // nothing runs before the lookup settled
    expect(store.lookups[0]!.key).toBe(ResponseCache.key(request, 'files-and-config'));
    store.lookups[0]!.settle(undefined);
    expect((await miss.done).response?.outputs[0]!.name).toBe('OUTPUT0');
    expect(instance.executions).toEqual([['r1']]);
    expect(store.inserted.map((e) => e.key)).toEqual([store.lookups[0]!.key]);
    const hit = collector();
    mv.submit(echoInit('r2'), hit.sender);
    store.lookups[1]!.settle(HIT);
    expect((await hit.done).response).toBe(HIT);
    expect(instance.executions).toEqual([['r1']]);
    expect([stats.cacheHit.count, stats.cacheMiss.count, stats.executionCount]).toEqual([1, 1, 1]);
  });

  it('retire waits for a pending lookup; the miss after it is refused through the sender', async () => {
    const store = new ManualSharedStore();
    const { mv } = modelVersion(CACHED, [new FakeInstance()], { responseCache: store });
    const c = collector();
    mv.submit(echoInit('r'), c.sender);
    expect(mv.inflightCount).toBe(1);
    let retired = false;
    const retiring = mv.retire().then(() => (retired = true));
    await tick();
    expect(retired).toBe(false);
    store.lookups[0]!.settle(undefined);
    expect((await c.done).error?.message).toBe("Request for unknown model: 'model' version 1 is not at ready state");
    await retiring;
    expect(mv.inflightCount).toBe(0);
  });

  it("the builder's scope is used only by a shared cache: the local cache keys each version object apart", () => {
    const local = new ResponseCache(1 << 20);
    const keys: string[] = [];
    const spy: ResponseCacheStore = {
      shared: false,
      get: (t, k) => (keys.push(k), local.get(t, k)),
      set: (t, k, r) => local.set(t, k, r),
      dropTenant: () => undefined,
    };
    for (let i = 0; i < 2; i++)
      modelVersion(CACHED, [new FakeInstance()], { responseCache: spy, cacheScope: 'same' }).mv.submit(echoInit('r'), collector().sender);
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
  });
});
