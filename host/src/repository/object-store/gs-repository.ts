/**
 * A model repository in a Google Cloud Storage bucket (Triton's `gs://` repositories, core
 * `filesystem/implementations/gcs.h`), through `@google-cloud/storage`: the Cloud Storage half of
 * an {@link ObjectStoreRepository} (object-store-repository.ts holds the listing rules, the bounds
 * on hostile object names and the local cache).
 *
 * Credentials, as Triton reads them: the JSON file `GOOGLE_APPLICATION_CREDENTIALS` (a user's or a
 * service account's), else the library's Application Default Credentials (gcloud's, or the
 * metadata server on Google Cloud). Another endpoint (an emulator): the standard
 * `STORAGE_EMULATOR_HOST` (`http://host:port`), which the library honours, unauthenticated.
 */
import { type Bucket, type File, type GetFilesOptions, Storage } from '@google-cloud/storage';
import type { Readable } from 'node:stream';
import type { GsLocation } from './gs-location.js';
import { ObjectStoreRepository, storeError, type ObjectStore, type ObjectStoreRepositoryOptions, type StoreObject } from './object-store-repository.js';
import * as err from './object-store.errors.js';

/** Objects per listing page (the service's most). */
const PAGE = 1000;

/**
 * The repository at `location`, its bucket's metadata read as Triton reads it.
 * @throws TritonError INTERNAL "Could not get MetaData for bucket with name ..." (start-up fails)
 */
export async function openGsRepository(location: GsLocation, opts: ObjectStoreRepositoryOptions): Promise<ObjectStoreRepository> {
  const env = opts.env ?? process.env;
  const storage = new Storage({
    keyFilename: env.GOOGLE_APPLICATION_CREDENTIALS || undefined,
    apiEndpoint: env.STORAGE_EMULATOR_HOST || undefined,
    retryOptions: { maxRetries: 2 },
  });
  const bucket = storage.bucket(location.bucket);
  try {
    await bucket.getMetadata();
  } catch (e) {
    throw err.gcsBucketCheckFailed(location.bucket, storeError(e).message);
  }
  opts.logger.info({ repository: location.url, endpoint: storage.apiEndpoint }, 'object-store model repository opened');
  return new ObjectStoreRepository(location.url, location.prefix, new GcsStore(bucket), opts.cache);
}

/** One bucket: listings by page, reads of the listed generation. */
class GcsStore implements ObjectStore {
  constructor(private readonly bucket: Bucket) {}

  async *prefixes(prefix: string): AsyncIterable<readonly string[]> {
    for await (const page of this.pages({ prefix, delimiter: '/' })) yield page.prefixes;
  }

  async *objects(prefix: string): AsyncIterable<readonly StoreObject[]> {
    for await (const page of this.pages({ prefix })) {
      yield page.files.map((f) => ({ key: f.name, size: Number(f.metadata.size ?? 0), tag: String(f.metadata.generation ?? f.metadata.etag ?? '') }));
    }
  }

  async read(key: string, tag: string): Promise<Readable> {
    // The listed generation: an object overwritten since the listing is not read (the next poll loads the new one).
    return this.bucket.file(key, /^[0-9]+$/.test(tag) ? { generation: tag } : {}).createReadStream();
  }

  reason(e: unknown): string {
    return storeError(e).name;
  }

  private async *pages(query: GetFilesOptions): AsyncGenerator<{ files: File[]; prefixes: string[] }> {
    let next: GetFilesOptions | null = { ...query, autoPaginate: false, maxResults: PAGE };
    while (next) {
      let files: File[];
      let response: { prefixes?: string[] } | undefined;
      try {
        [files, next, response] = (await this.bucket.getFiles(next)) as [File[], GetFilesOptions | null, { prefixes?: string[] } | undefined];
      } catch (e) {
        throw err.gcsListFailed(`gs://${this.bucket.name}/${query.prefix ?? ''}`, storeError(e).message);
      }
      yield { files, prefixes: response?.prefixes ?? [] };
    }
  }
}
