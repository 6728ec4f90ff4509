/**
 * The operator's `--model-repository` values as {@link ModelRepository} objects: a local
 * directory, or an object-store location in Triton's syntax (`s3://...`, `gs://...`, `as://...`;
 * see object-store/{s3,gs,as}-location.ts). Remote repositories share one bounded local cache.
 */
import type { Logger } from 'pino';
import { LocalRepository, type ModelRepository } from './model-repository.js';
import { ModelCache } from './object-store/model-cache.js';
import * as err from './object-store/object-store.errors.js';
import { parseAsLocation } from './object-store/as-location.js';
import { openAsRepository } from './object-store/as-repository.js';
import { parseGsLocation } from './object-store/gs-location.js';
import { openGsRepository } from './object-store/gs-repository.js';
import type { ObjectStoreRepositoryOptions } from './object-store/object-store-repository.js';
import { isObjectStoreUrl, parseS3Location } from './object-store/s3-location.js';
import { openS3Repository } from './object-store/s3-repository.js';
import { openS3Client } from './object-store/s3-client.js';
import { SharedUploads } from './object-store/shared-uploads.js';

/** Where fetched models are kept, and how many bytes at most. */
export interface RepositoryCacheOptions {
  directory: string;
  maxBytes: number;
}

/** Default `--repository-cache-bytes`: 8 GiB. */
export const DEFAULT_REPOSITORY_CACHE_BYTES = 8 * 1024 ** 3;

/**
 * Open every repository, in order.
 * @throws TritonError INVALID_ARG for a malformed or unsupported location; INTERNAL when an
 *   object store cannot be reached with the credentials found (start-up fails, as Triton's does)
 */
export async function openRepositories(
  specs: readonly string[],
  cache: RepositoryCacheOptions,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ModelRepository[]> {
  let shared: ModelCache | undefined;
  const out: ModelRepository[] = [];
  for (const spec of specs) {
    if (!isObjectStoreUrl(spec)) {
      out.push(new LocalRepository(spec));
      continue;
    }
    shared ??= new ModelCache({ directory: cache.directory, maxBytes: cache.maxBytes, logger: logger.child({ component: 'repository-cache' }) });
    out.push(await openObjectStore(spec, { cache: shared, logger, env }));
  }
  return out;
}

/** The object-store repository at `spec`, by its scheme. */
function openObjectStore(spec: string, opts: ObjectStoreRepositoryOptions & { env: NodeJS.ProcessEnv }): Promise<ModelRepository> {
  if (spec.startsWith('gs://')) return openGsRepository(parseGsLocation(spec), opts);
  if (spec.startsWith('as://')) return openAsRepository(parseAsLocation(spec, opts.env), opts);
  return openS3Repository(parseS3Location(spec), opts);
}

/**
 * The shared upload store at `spec` (`--upload-store=s3://...`).
 * @throws TritonError INVALID_ARG for a location that is not `s3://`; INTERNAL when the bucket cannot be reached
 */
export async function openSharedUploads(spec: string, env: NodeJS.ProcessEnv = process.env): Promise<SharedUploads> {
  if (isObjectStoreUrl(spec) && !spec.startsWith('s3://')) throw err.schemeUnsupported(spec, spec.slice(0, 2));
  const location = parseS3Location(spec);
  return new SharedUploads(location, await openS3Client(location, env));
}
