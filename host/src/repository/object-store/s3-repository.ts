/**
 * A model repository in an S3 bucket or an S3-compatible store (Triton's `s3://` repositories,
 * core `filesystem/implementations/s3.h`), through the AWS SDK for JavaScript v3: the S3 half
 * of an {@link ObjectStoreRepository} (object-store-repository.ts holds the listing rules, the
 * bounds on hostile keys and the local cache).
 *
 * Credentials, region and endpoint as Triton reads them: see s3-client.ts. Requests are
 * path-style (`host/bucket/key`), as Triton sends them, so S3-compatible stores work without DNS.
 */
import { GetObjectCommand, ListObjectsV2Command, type ListObjectsV2CommandOutput, type S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { ObjectStoreRepository, type ObjectStore, type ObjectStoreRepositoryOptions, type StoreObject } from './object-store-repository.js';
import * as err from './object-store.errors.js';
import { openS3Client, sdkErrorMessage, sdkErrorName } from './s3-client.js';
import type { S3Location } from './s3-location.js';

/**
 * The repository at `location`, its bucket checked as Triton checks it (`HeadBucket`).
 * @throws TritonError "Unable to create S3 filesystem client. Check account credentials. ..." (start-up fails)
 */
export async function openS3Repository(location: S3Location, opts: ObjectStoreRepositoryOptions): Promise<ObjectStoreRepository> {
  const client = await openS3Client(location, opts.env ?? process.env);
  opts.logger.info({ repository: location.url, endpoint: location.endpoint ?? 'AWS' }, 'object-store model repository opened');
  return new ObjectStoreRepository(location.url, location.prefix, new S3Store(client, location.bucket), opts.cache);
}

/** One bucket through the AWS SDK: ListObjectsV2 pages, GetObject with `If-Match` on the listed ETag. */
class S3Store implements ObjectStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async *prefixes(prefix: string): AsyncIterable<readonly string[]> {
    for await (const page of this.pages({ Prefix: prefix, Delimiter: '/' })) yield (page.CommonPrefixes ?? []).map((p) => p.Prefix ?? '');
  }

  async *objects(prefix: string): AsyncIterable<readonly StoreObject[]> {
    for await (const page of this.pages({ Prefix: prefix }))
      yield (page.Contents ?? []).map((o) => ({ key: o.Key ?? '', size: o.Size ?? 0, tag: o.ETag ?? '' }));
  }

  async read(key: string, tag: string): Promise<Readable> {
    const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: tag || undefined }));
    return out.Body as Readable;
  }

  reason(e: unknown): string {
    return sdkErrorName(e);
  }

  private async *pages(query: { Prefix: string; Delimiter?: string }): AsyncGenerator<ListObjectsV2CommandOutput> {
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, ...query, ContinuationToken: token }));
      } catch (e) {
        throw err.listFailed(`s3://${this.bucket}/${query.Prefix}`, sdkErrorName(e), sdkErrorMessage(e));
      }
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}
