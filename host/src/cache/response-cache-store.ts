/**
 * What a model version needs of a response cache (Triton's cache API: lookup and insert, core
 * `src/cache_manager.cc`), implemented by the in-process LRU (`response-cache.ts`, `--cache-config
 * local,...`) and by Redis (`redis-cache.ts`, `--cache-config redis,...`, shared by every replica).
 * Keys are {@link ResponseCache.key}'s: the caller computes them; a store only keeps them apart
 * per namespace (tenant) and within the namespace's share.
 */
import type { InferenceResponse } from '../contract/types.js';

export interface ResponseCacheStore {
  /**
   * True when other processes read and write the same entries (Redis): a key's scope must then
   * name the same model files and config on every replica, and nothing process-local.
   */
  readonly shared: boolean;
  /**
   * `tenant`'s response for `key`, or undefined. Synchronous for the local cache (its hot path
   * stays free of promises); a promise for Redis, which never rejects: every failure is a miss.
   * The tensors may be shared with the cache: read-only.
   */
  get(tenant: string, key: string): InferenceResponse | undefined | Promise<InferenceResponse | undefined>;
  /**
   * Keep a copy of `response` (its outputs are copied before this returns: the caller may release
   * its buffers). Never throws; a store that fails drops the entry.
   */
  set(tenant: string, key: string, response: InferenceResponse): void;
  /** Forget every entry of `tenant` (a tenant removed from the tenants file). Never throws. */
  dropTenant(tenant: string): void;
}
