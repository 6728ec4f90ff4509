/**
 * The fleet's shared tier of the wasmtime compile cache in the upload store's bucket
 * (`<prefix>/compiled/wasmtime/<entry name>`), the object-store side of
 * backends/wasm/wasmtime/remote-cache.ts: what one replica compiled, the others load. Entries are
 * trusted only through their keyed MAC, checked by the engine when an entry is loaded, never
 * because they came from this store. Failures are misses, logged at most once a minute.
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import { sdkErrorName } from './s3-client.js';
import type { S3Location } from './s3-location.js';

const ENTRY = /^[0-9a-f]{64}-[0-9a-f]{16}-[0-9a-f]{64}\.cwasm$/;
const PREFIX = /^[0-9a-f]{64}-[0-9a-f]{16}-$/;

export class S3CompileCache {
  private readonly root: string;
  private lastWarning = 0;

  constructor(
    private readonly where: S3Location,
    private readonly client: S3Client,
    private readonly logger: Logger,
  ) {
    this.root = `${where.prefix === '' ? '' : `${where.prefix}/`}compiled/wasmtime/`;
  }

  /** An entry whose name starts with `prefix` (`<sha256>-<config 16>-`), at most `maxBytes` long; undefined on a miss or a failure. */
  async fetch(prefix: string, maxBytes: number): Promise<{ name: string; bytes: Uint8Array } | undefined> {
    if (!PREFIX.test(prefix)) return undefined;
    try {
      const list = await this.client.send(new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: this.root + prefix, MaxKeys: 4 }));
      const found = (list.Contents ?? []).find((o) => ENTRY.test((o.Key ?? '').slice(this.root.length)) && (o.Size ?? Infinity) <= maxBytes);
      if (!found) return undefined;
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: found.Key }));
      if ((got.ContentLength ?? Infinity) > maxBytes) return undefined;
      const bytes = await got.Body!.transformToByteArray();
      return { name: found.Key!.slice(this.root.length), bytes };
    } catch (e) {
      this.warn('fetch', e);
      return undefined;
    }
  }

  /** Store an entry (best effort). */
  async store(entry: { name: string; bytes: Uint8Array }): Promise<void> {
    if (!ENTRY.test(entry.name)) return;
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.where.bucket, Key: this.root + entry.name, Body: entry.bytes }));
    } catch (e) {
      this.warn('store', e);
    }
  }

  private warn(op: string, e: unknown): void {
    if (Date.now() - this.lastWarning < 60_000) return;
    this.lastWarning = Date.now();
    this.logger.warn({ op, reason: sdkErrorName(e) }, 'shared compile cache unavailable; compiling locally');
  }
}
