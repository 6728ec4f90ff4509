/**
 * The response cache (Triton's `local` cache: `--cache-config local,size=N`, model config
 * `response_cache { enable: true }`): an LRU of final responses bounded by the bytes of their
 * tensors (lru-cache), shared by every model version that enables it.
 *
 * Keys follow Triton's request hash (`RequestResponseCache::Hash`): the model name, the version
 * that serves, and every input in name order with its name and bytes — plus, so that a hit is
 * never the answer to a different request, the input's datatype and shape, the requested outputs
 * and the request's namespace (a tenant never gets another tenant's response). SHA-256, not a
 * 64-bit hash, so colliding requests cannot be forged.
 *
 * Capacity is budgeted per namespace (DESIGN "Multi-tenancy": no tenant can evict another's
 * entries): each namespace's entries form their own LRU, and an insertion evicts only entries of
 * its own namespace. The operator's namespace `''` (all of single-user mode) holds up to `maxBytes`;
 * a tenant up to its share ({@link ResponseCacheOptions.shareOf}, the tenant's `max_cache_bytes`
 * quota), never more than `maxBytes`. The memory held is therefore at most `maxBytes` plus the
 * tenants' shares.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { InferenceRequest, InferenceResponse, Tensor } from '../contract/types.js';
import type { ResponseCacheStore } from './response-cache-store.js';

/** Per-entry overhead counted against the size besides tensor bytes (names, shapes, the key). */
const ENTRY_OVERHEAD_BYTES = 256;

interface Entry {
  response: InferenceResponse;
  bytes: number;
}

/** How the cache budgets its capacity between tenants. */
export interface ResponseCacheOptions {
  /**
   * A tenant's share, bytes (capped at the cache's `maxBytes`; not a non-negative number = 0). Read
   * at each insertion: a changed share (a tenants-file reload) replaces the tenant's partition,
   * dropping what it held. Default: `maxBytes` for everyone.
   */
  shareOf?: (tenant: string) => number;
}

/** One namespace's entries: an LRU bounded by its share. */
interface Partition {
  readonly lru: LRUCache<string, Entry>;
  readonly maxBytes: number;
}

export class ResponseCache implements ResponseCacheStore {
  /** In this process only: keys may name the loaded version object. */
  readonly shared = false;
  private readonly partitions = new Map<string, Partition>();

  /**
   * @param maxBytes `size=N` of `--cache-config local,size=N` (bytes, > 0): the operator
   *   namespace's capacity and the cap on every tenant's share
   */
  constructor(
    readonly maxBytes: number,
    private readonly opts: ResponseCacheOptions = {},
  ) {}

  /** The capacity of `tenant`'s partition, bytes ('' = the operator's: `maxBytes`). */
  shareOf(tenant: string): number {
    if (tenant === '' || !this.opts.shareOf) return this.maxBytes;
    const share = this.opts.shareOf(tenant);
    return Number.isFinite(share) && share > 0 ? Math.min(this.maxBytes, Math.floor(share)) : 0;
  }

  /**
   * The key of `request` (see the module comment).
   * @param scope names the loaded model version object: a reload of the same version number
   *   (new files) gets a new scope, so it never answers from the old one's responses
   */
  static key(request: InferenceRequest, scope = ''): string {
    const h = createHash('sha256');
    const field = (s: string) => h.update(`${Buffer.byteLength(s)}:${s}`);
    field(scope);
    field(request.tenant);
    field(request.model);
    field(String(request.version));
    const inputs = [...request.inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const t of inputs) {
      field(t.name);
      field(t.datatype);
      field(t.shape.join(','));
      field(String(t.data.length));
      h.update(t.data);
    }
    field([...request.requestedOutputs].sort().join('\u0000'));
    return h.digest('hex');
  }

  /** `tenant`'s cached response for `key` (tensors shared with the cache: read-only), or undefined. */
  get(tenant: string, key: string): InferenceResponse | undefined {
    return this.partitions.get(tenant)?.lru.get(key)?.response;
  }

  /**
   * Keep a copy of `response` in `tenant`'s partition (outputs copied: the caller releases its own
   * buffers), evicting that partition's least recently used entries as needed — never another
   * namespace's. Larger than the tenant's share: not kept.
   */
  set(tenant: string, key: string, response: InferenceResponse): void {
    const share = this.shareOf(tenant);
    let part = this.partitions.get(tenant);
    if (part && part.maxBytes !== share) {
      this.partitions.delete(tenant);
      part = undefined;
    }
    const outputs: Tensor[] = response.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape], data: new Uint8Array(t.data) }));
    const bytes = outputs.reduce((n, t) => n + t.data.length, ENTRY_OVERHEAD_BYTES);
    if (bytes > share) return;
    if (!part) {
      part = { lru: new LRUCache<string, Entry>({ maxSize: share, sizeCalculation: (e) => Math.max(1, e.bytes) }), maxBytes: share };
      this.partitions.set(tenant, part);
    }
    part.lru.set(key, { response: { outputs, parameters: response.parameters ? { ...response.parameters } : undefined }, bytes });
  }

  /** Drop every entry of `tenant` (a tenant removed from the tenants file). */
  dropTenant(tenant: string): void {
    this.partitions.delete(tenant);
  }

  /** Entries and bytes held: all namespaces together, or `tenant`'s alone. */
  size(tenant?: string): { entries: number; bytes: number } {
    let entries = 0;
    let bytes = 0;
    for (const [t, p] of this.partitions) {
      if (tenant !== undefined && t !== tenant) continue;
      entries += p.lru.size;
      bytes += p.lru.calculatedSize;
    }
    return { entries, bytes };
  }
}
