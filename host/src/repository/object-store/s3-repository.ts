/**
 * A model repository in an S3 bucket or an S3-compatible store (Triton's `s3://` repositories,
 * core `filesystem/implementations/s3.h`), through the AWS SDK for JavaScript v3.
 *
 * Credentials and region, as Triton reads them: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`
 * (and `AWS_SESSION_TOKEN`), else the profile `AWS_PROFILE` (or `default`) of the shared config
 * and credentials files; the region is `AWS_DEFAULT_REGION`, else `AWS_REGION`, else the
 * profile's, else `us-east-1`. Requests are path-style (`host/bucket/key`), as Triton sends them,
 * so S3-compatible stores work without DNS. An endpoint comes from the location
 * (`s3://host:port/bucket/...`) or, for every `s3://` location without one, the SDK's
 * `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`.
 *
 * Object keys are hostile input: a key below a model's prefix becomes a path in the local cache
 * only when every component is a plain name (the rules of a model name, contract/names.ts) and
 * the listing is within {@link MAX_MODEL_OBJECTS} objects; otherwise the load fails and names the key.
 */
import { GetObjectCommand, ListObjectsV2Command, type ListObjectsV2CommandOutput, type S3Client } from '@aws-sdk/client-s3';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { modelNameProblem } from '../../contract/names.js';
import type { ModelRepository, OpenedModel } from '../model-repository.js';
import type { ListedObject, ModelCache, ModelListing } from './model-cache.js';
import { listingStamp } from './model-cache.js';
import * as err from './object-store.errors.js';
import { openS3Client, sdkErrorMessage, sdkErrorName } from './s3-client.js';
import type { S3Location } from './s3-location.js';

/** Most objects one model may have. */
export const MAX_MODEL_OBJECTS = 10_000;
/** Most models one repository may list. */
export const MAX_REPOSITORY_MODELS = 100_000;
/** Longest object path below a model's prefix, UTF-8 bytes, and deepest nesting. */
const MAX_OBJECT_PATH_BYTES = 1024;
const MAX_OBJECT_DEPTH = 32;

/** Options of {@link S3Repository.open}. */
export interface S3RepositoryOptions {
  cache: ModelCache;
  logger: Logger;
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

export class S3Repository implements ModelRepository {
  readonly location: string;
  private readonly root: string;

  private constructor(
    private readonly where: S3Location,
    private readonly client: S3Client,
    private readonly cache: ModelCache,
  ) {
    this.location = where.url;
    this.root = where.prefix === '' ? '' : `${where.prefix}/`;
  }

  /**
   * The repository at `location`, its bucket checked as Triton checks it (`HeadBucket`).
   * @throws TritonError "Unable to create S3 filesystem client. Check account credentials. ..." (start-up fails)
   */
  static async open(location: S3Location, opts: S3RepositoryOptions): Promise<S3Repository> {
    const client = await openS3Client(location, opts.env ?? process.env);
    opts.logger.info({ repository: location.url, endpoint: location.endpoint ?? 'AWS' }, 'object-store model repository opened');
    return new S3Repository(location, client, opts.cache);
  }

  /** @throws Error when the bucket cannot be listed */
  async models(): Promise<string[]> {
    const names: string[] = [];
    for await (const page of this.pages({ Prefix: this.root, Delimiter: '/' })) {
      for (const p of page.CommonPrefixes ?? []) {
        const name = (p.Prefix ?? '').slice(this.root.length, -1);
        if (name.startsWith('.') || modelNameProblem(name) !== undefined) continue;
        names.push(name);
        if (names.length > MAX_REPOSITORY_MODELS) throw err.tooManyModels(this.location, MAX_REPOSITORY_MODELS);
      }
    }
    return names;
  }

  async stamp(name: string): Promise<string> {
    return listingStamp(await this.listing(name));
  }

  /** @throws TritonError when the model is gone, a key is not a plain path, or the copy cannot be made */
  async open(name: string): Promise<OpenedModel> {
    const listing = await this.listing(name);
    if (listing.objects.length === 0) throw err.modelNotInStore(name);
    const prefix = `${this.root}${name}/`;
    const tags = new Map(listing.objects.map((o) => [o.path, o.tag]));
    const copy = await this.cache.acquire(this.location, name, listing, async (path) => {
      try {
        // IfMatch: the object is the one listed; a concurrent overwrite fails the fetch (the next poll loads the new files).
        const out = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: prefix + path, IfMatch: tags.get(path) || undefined }));
        return out.Body as Readable;
      } catch (e) {
        throw err.objectFetchFailed(name, path, sdkErrorName(e));
      }
    });
    return { modelPath: copy.modelPath, repositoryPath: dirname(copy.modelPath), stamp: copy.stamp, release: copy.release };
  }

  /**
   * Every object under the model's prefix, as paths relative to the model directory.
   * @throws TritonError INVALID_ARG for a key that is not a plain relative path, or more than {@link MAX_MODEL_OBJECTS} objects; Error when listing fails
   */
  private async listing(name: string): Promise<ModelListing> {
    const prefix = `${this.root}${name}/`;
    const objects: ListedObject[] = [];
    const directories: string[] = [];
    for await (const page of this.pages({ Prefix: prefix })) {
      for (const o of page.Contents ?? []) {
        const rel = (o.Key ?? '').slice(prefix.length);
        if (rel === '') continue;
        const isMarker = rel.endsWith('/');
        const path = isMarker ? rel.slice(0, -1) : rel;
        checkObjectPath(name, path);
        if (isMarker) directories.push(path);
        else objects.push({ path, size: o.Size ?? 0, tag: o.ETag ?? '' });
        if (objects.length + directories.length > MAX_MODEL_OBJECTS) throw err.tooManyObjects(name, MAX_MODEL_OBJECTS);
      }
    }
    return { objects, directories };
  }

  private async *pages(query: { Prefix: string; Delimiter?: string }): AsyncGenerator<ListObjectsV2CommandOutput> {
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: this.where.bucket, ...query, ContinuationToken: token }));
      } catch (e) {
        throw err.listFailed(`s3://${this.where.bucket}/${query.Prefix}`, sdkErrorName(e), sdkErrorMessage(e));
      }
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}

/**
 * A key's path below its model's prefix: plain components, bounded length and depth.
 * @throws TritonError INVALID_ARG naming the model and the (quoted) path
 */
function checkObjectPath(model: string, path: string): void {
  const parts = path.split('/');
  if (Buffer.byteLength(path, 'utf8') > MAX_OBJECT_PATH_BYTES || parts.length > MAX_OBJECT_DEPTH || parts.some((p) => modelNameProblem(p) !== undefined)) {
    throw err.objectKeyNotPlain(model, JSON.stringify(path.slice(0, 200)));
  }
}
