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
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { InferenceRequest, InferenceResponse, Tensor } from '../core/types.js';

/** Per-entry overhead counted against the size besides tensor bytes (names, shapes, the key). */
const ENTRY_OVERHEAD_BYTES = 256;

interface Entry {
  response: InferenceResponse;
  bytes: number;
}

export class ResponseCache {
  private readonly lru: LRUCache<string, Entry>;

  /** @param maxBytes `size=N` of `--cache-config local,size=N` (bytes, > 0) */
  constructor(readonly maxBytes: number) {
    this.lru = new LRUCache<string, Entry>({ maxSize: maxBytes, sizeCalculation: (e) => Math.max(1, e.bytes) });
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

  /** A cached response (tensors shared with the cache: read-only), or undefined. */
  get(key: string): InferenceResponse | undefined {
    return this.lru.get(key)?.response;
  }

  /** Keep a copy of `response` (outputs copied: the caller releases its own buffers). Too large for the cache: not kept. */
  set(key: string, response: InferenceResponse): void {
    const outputs: Tensor[] = response.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape], data: new Uint8Array(t.data) }));
    const bytes = outputs.reduce((n, t) => n + t.data.length, ENTRY_OVERHEAD_BYTES);
    if (bytes > this.maxBytes) return;
    this.lru.set(key, { response: { outputs, parameters: response.parameters ? { ...response.parameters } : undefined }, bytes });
  }

  /** Entries and bytes held. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.lru.size, bytes: this.lru.calculatedSize };
  }
}
