/**
 * Tenants' uploads kept in an object store, so that every replica serves them
 * (`--upload-store=s3://...`; DESIGN "Multi-tenancy": tenant state lives in stores a fleet already
 * runs). Each replica keeps its local upload store (repository/upload-store.ts) as a working copy;
 * this store is the truth that every replica reads.
 *
 * Layout below the location's prefix:
 *   blobs/sha256/<64 hex>       one file's bytes, named by their SHA-256: the same bytes are stored
 *                               once, whichever tenant, model or replica uploads them (a tenant's
 *                               upload PUTs a blob its own models do not hold, stored or not, so
 *                               its timing does not tell whether another tenant holds the bytes)
 *   models/<tenant>/<model>     the model's pointer (JSON, {@link Pointer}): its files (path → digest,
 *                               size), its config override and the tenant's creation identity
 *
 * Publish protocol: every blob first (skipped when already stored), then the pointer in one PUT.
 * A PUT is atomic in S3, so a reader sees the old pointer or the new one, and a replica killed at
 * any point leaves at most unreferenced blobs, never a partial model. A delete removes the pointer
 * (blobs stay: another model may share them). The pointer's ETag is the model's stamp: replicas
 * compare it with the one they loaded to notice a change or a delete.
 *
 * Everything read back is hostile: a pointer is parsed with bounds (file count, path rules, sizes
 * within the upload limit), and every blob is checked against its digest and size before use.
 */
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { sha256Of } from '../../contract/content-digest.js';
import { requestedInstances, type StoredUsage } from '../../contract/admission.js';
import { TritonError } from '../../contract/errors.js';
import { TENANT_ID_RE, modelNameProblem } from '../../contract/names.js';
import type { ModelKey } from '../../contract/types.js';
import type { FileOverrides, HeldBlob } from '../overrides.js';
import type { Logger } from 'pino';
import { S3CompileCache } from './compiled-cache.js';
import * as err from './object-store.errors.js';
import { isMissing, sdkErrorName } from './s3-client.js';
import type { S3Location } from './s3-location.js';

const POINTER_FORMAT = 'warden-shared-upload/1';
/** Most files one stored model may have. */
const MAX_FILES = 10_000;
/** Largest pointer read back, bytes. */
const MAX_POINTER_BYTES = 4 * 1024 * 1024;
const DIGEST = /^[0-9a-f]{64}$/;
/** Most pointer stamps whose instance count is remembered. */
const MAX_MEMO = 100_000;

/** A stored model's pointer. */
export interface Pointer {
  readonly format: typeof POINTER_FORMAT;
  /** Relative path (`1/model.wasm`) → the file's SHA-256 (hex) and size in bytes. */
  readonly files: Readonly<Record<string, { readonly sha256: string; readonly size: number }>>;
  /** The config override the model loads with (`parameters.config` of its upload). */
  readonly config: unknown;
  /** The uploading tenant's creation identity (null for an entry without `uid`). */
  readonly owner: string | null;
}

/** A pointer as read, with its stamp (the object's ETag). */
export interface StoredPointer {
  readonly pointer: Pointer;
  readonly stamp: string;
}

/** `models/<tenant>/<model>`, or undefined when the key is not a tenant model. */
function pointerKey(root: string, key: ModelKey): string | undefined {
  if (!TENANT_ID_RE.test(key.namespace) || modelNameProblem(key.name) !== undefined) return undefined;
  return `${root}models/${key.namespace}/${key.name}`;
}

export class SharedUploads {
  private readonly root: string;

  constructor(
    private readonly where: S3Location,
    private readonly client: S3Client,
  ) {
    this.root = where.prefix === '' ? '' : `${where.prefix}/`;
  }

  /** Instances each stored pointer's config asks for, by the pointer's stamp (pointers do not change under a stamp). */
  private readonly instancesByStamp = new Map<string, number>();

  /**
   * What `namespace`'s stored models other than `exclude` hold: their count, and the instances
   * their configs ask for (each pointer read once per stamp).
   * @throws TritonError INTERNAL when the store cannot be read
   */
  async usage(namespace: string, exclude: string): Promise<StoredUsage> {
    let models = 0;
    let instances = 0;
    for (const [id, stamp] of await this.stamps(namespace)) {
      const name = id.slice(namespace.length + 1);
      if (name === exclude) continue;
      models++;
      let n = this.instancesByStamp.get(stamp);
      if (n === undefined) {
        const stored = await this.get({ namespace, name }).catch(() => undefined);
        // A pointer that cannot be read counts as one instance (it cannot be loaded as stored).
        n = stored ? requestedInstances(stored.pointer.config) : 1;
        if (this.instancesByStamp.size >= MAX_MEMO) this.instancesByStamp.clear();
        this.instancesByStamp.set(stored?.stamp ?? stamp, n);
      }
      instances += n;
    }
    return { models, instances };
  }

  /** The store's location (for logs). */
  get location(): string {
    return this.where.url;
  }

  /** The fleet's shared tier of the wasmtime compile cache, in this store's bucket (./compiled-cache.ts). */
  compileCache(logger: Logger): S3CompileCache {
    return new S3CompileCache(this.where, this.client, logger);
  }

  /** The digests each stored pointer's files have, by the pointer's stamp (pointers do not change under a stamp). */
  private readonly digestsByStamp = new Map<string, { owner: string | null; files: Map<string, number> }>();

  /**
   * The files `namespace`'s own stored models hold (pointers of its current creation, `owner`):
   * SHA-256 → size. Other tenants' pointers are never read (docs/tenancy.md "Uploads by digest").
   * @throws TritonError INTERNAL when the store cannot be listed
   */
  async heldDigests(namespace: string, owner: string | undefined): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [id, stamp] of await this.stamps(namespace)) {
      let held = this.digestsByStamp.get(stamp);
      if (!held) {
        const stored = await this.get({ namespace, name: id.slice(namespace.length + 1) }).catch(() => undefined);
        if (!stored) continue;
        held = { owner: stored.pointer.owner, files: new Map(Object.values(stored.pointer.files).map((f) => [f.sha256, f.size])) };
        if (this.digestsByStamp.size >= MAX_MEMO) this.digestsByStamp.clear();
        this.digestsByStamp.set(stored.stamp, held);
      }
      if (held.owner !== (owner ?? null)) continue;
      for (const [sha256, size] of held.files) out.set(sha256, size);
    }
    return out;
  }

  /**
   * The bytes of the blob of `sha256`, checked against the digest and `size`.
   * @throws TritonError INTERNAL when it is missing or differs
   */
  async blob(model: string, path: string, sha256: string, size: number): Promise<Uint8Array> {
    if (!DIGEST.test(sha256)) throw err.sharedBlobDiffers(model, path);
    const data = await this.send(model, async () => {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: `${this.root}blobs/sha256/${sha256}` }));
      if ((got.ContentLength ?? 0) !== size) throw err.sharedBlobDiffers(model, path);
      return got.Body!.transformToByteArray();
    });
    if (data.byteLength !== size || createHash('sha256').update(data).digest('hex') !== sha256) throw err.sharedBlobDiffers(model, path);
    return data;
  }

  /**
   * Store a model: its files (each PUT unless the tenant's own stored models already hold that
   * digest: whether another tenant stored the same bytes never changes the work), then its pointer.
   * `blobs`: files named by digest, which the tenant's stored models must still hold (no bytes sent).
   * @returns the pointer's stamp
   * @throws TritonError INTERNAL when the store refuses a write (nothing becomes visible then)
   */
  async publish(key: ModelKey, files: FileOverrides, config: unknown, owner: string | undefined, blobs?: ReadonlyMap<string, HeldBlob>): Promise<string> {
    if (!pointerKey(this.root, key)) throw err.sharedKeyInvalid(key.name);
    const entries: Record<string, { sha256: string; size: number }> = {};
    const own = await this.heldDigests(key.namespace, owner);
    for (const [path, b] of blobs ?? []) {
      // named by digest: the tenant's stored models held it when the load began
      if (own.get(b.sha256) !== b.size) throw err.sharedBlobDiffers(key.name, path);
      entries[path] = { sha256: b.sha256, size: b.size };
    }
    for (const [path, data] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const sha256 = await sha256Of(data);
      entries[path] = { sha256, size: data.byteLength };
      if (own.get(sha256) === data.byteLength) continue;
      const blob = `${this.root}blobs/sha256/${sha256}`;
      await this.send(key.name, () => this.client.send(new PutObjectCommand({ Bucket: this.where.bucket, Key: blob, Body: data })));
    }
    return this.publishPointer(key, entries, config, owner);
  }

  /**
   * Write the model's pointer over files already stored (a new config for the same files).
   * @returns the pointer's stamp
   * @throws TritonError INTERNAL when the store refuses the write
   */
  async publishPointer(key: ModelKey, files: Pointer['files'], config: unknown, owner: string | undefined): Promise<string> {
    const target = pointerKey(this.root, key);
    if (!target) throw err.sharedKeyInvalid(key.name);
    const pointer: Pointer = { format: POINTER_FORMAT, files, config: config ?? null, owner: owner ?? null };
    const out = await this.send(key.name, () =>
      this.client.send(new PutObjectCommand({ Bucket: this.where.bucket, Key: target, Body: JSON.stringify(pointer), ContentType: 'application/json' })),
    );
    return etag(out.ETag);
  }

  /**
   * The model's pointer, or undefined when none is stored.
   * @throws TritonError INTERNAL when the store cannot be read or the pointer is malformed
   */
  async get(key: ModelKey): Promise<StoredPointer | undefined> {
    const target = pointerKey(this.root, key);
    if (!target) return undefined;
    let body: Uint8Array;
    let stamp: string;
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: target }));
      if ((out.ContentLength ?? 0) > MAX_POINTER_BYTES) throw err.sharedPointerInvalid(key.name, 'too large');
      body = await out.Body!.transformToByteArray();
      stamp = etag(out.ETag);
    } catch (e) {
      if (isMissing(e)) return undefined;
      if (e instanceof TritonError) throw e;
      throw err.sharedStoreFailed(key.name, sdkErrorName(e));
    }
    return { pointer: parsePointer(key.name, body), stamp };
  }

  /**
   * The files of a pointer, each checked against its digest and size.
   * @throws TritonError INVALID_ARG when they exceed `maxBytes`; INTERNAL when a blob is missing or differs
   */
  async files(key: ModelKey, pointer: Pointer, maxBytes: number): Promise<FileOverrides> {
    const total = Object.values(pointer.files).reduce((n, f) => n + f.size, 0);
    if (total > maxBytes) throw err.sharedModelTooLarge(key.name, total, maxBytes);
    const out: FileOverrides = new Map();
    for (const [path, f] of Object.entries(pointer.files)) {
      out.set(path, await this.blob(key.name, path, f.sha256, f.size));
    }
    return out;
  }

  /** Remove the model's pointer (its blobs stay). @throws TritonError INTERNAL when the store refuses */
  async remove(key: ModelKey): Promise<void> {
    const target = pointerKey(this.root, key);
    if (!target) return;
    await this.send(key.name, () => this.client.send(new DeleteObjectCommand({ Bucket: this.where.bucket, Key: target })));
  }

  /**
   * Every stored model's stamp, by `<tenant>/<model>` (one listing: a request per 1,000 models).
   * @throws TritonError INTERNAL when the store cannot be listed
   */
  async stamps(namespace?: string): Promise<Map<string, string>> {
    const prefix = `${this.root}models/${namespace === undefined ? '' : `${namespace}/`}`;
    const out = new Map<string, string>();
    let token: string | undefined;
    do {
      const page = await this.send('', () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: prefix, ContinuationToken: token })),
      );
      for (const o of page.Contents ?? []) {
        const rel = (o.Key ?? '').slice(`${this.root}models/`.length);
        const [tenant, name, extra] = rel.split('/');
        if (extra !== undefined || !tenant || !name || !TENANT_ID_RE.test(tenant) || modelNameProblem(name) !== undefined) continue;
        out.set(`${tenant}/${name}`, etag(o.ETag));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  /** Run one store call; an SDK failure becomes INTERNAL naming the model and the error's name. */
  private async send<T>(model: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      if (e instanceof TritonError) throw e;
      throw err.sharedStoreFailed(model, sdkErrorName(e));
    }
  }
}

/** An ETag as a stamp: stores differ in whether they quote it. */
function etag(tag: string | undefined): string {
  return (tag ?? '').replace(/^"|"$/g, '');
}

/**
 * A pointer read back: format, file count, plain relative paths, digests, sizes.
 * @throws TritonError INTERNAL naming what is wrong
 */
function parsePointer(model: string, body: Uint8Array): Pointer {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    throw err.sharedPointerInvalid(model, 'not JSON');
  }
  const p = v as Partial<Pointer> | null;
  if (!p || typeof p !== 'object' || p.format !== POINTER_FORMAT) throw err.sharedPointerInvalid(model, 'unknown format');
  if (!p.files || typeof p.files !== 'object' || Array.isArray(p.files)) throw err.sharedPointerInvalid(model, 'no files');
  const files = Object.entries(p.files);
  if (files.length === 0 || files.length > MAX_FILES) throw err.sharedPointerInvalid(model, 'file count');
  for (const [path, f] of files) {
    const parts = path.split('/');
    if (parts.length > 32 || Buffer.byteLength(path) > 1024 || parts.some((c) => modelNameProblem(c) !== undefined))
      throw err.sharedPointerInvalid(model, 'a file path');
    if (!f || typeof f.sha256 !== 'string' || !DIGEST.test(f.sha256) || !Number.isSafeInteger(f.size) || f.size < 0)
      throw err.sharedPointerInvalid(model, 'a file entry');
  }
  if (p.owner !== null && typeof p.owner !== 'string') throw err.sharedPointerInvalid(model, 'owner');
  return { format: POINTER_FORMAT, files: p.files, config: p.config ?? null, owner: p.owner ?? null };
}
