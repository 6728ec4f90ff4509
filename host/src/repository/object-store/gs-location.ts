/**
 * `--model-repository=gs://bucket/path` as Triton reads it (core `filesystem/implementations/gcs.h`,
 * `ParsePath`: the bucket is everything up to the first `/`, the rest is the object prefix).
 * Repeated slashes collapse and trailing ones are dropped, as for `s3://` (s3-location.ts). Warden
 * is stricter than Triton where Triton would guess: the bucket must be a valid Cloud Storage bucket
 * name, and a path component may not be `.` or `..` or hold a control character.
 */
import * as err from './object-store.errors.js';
import { repositoryPrefix } from './s3-location.js';

/** A parsed `gs://` repository location. */
export interface GsLocation {
  /** The location as given (for logs). */
  readonly url: string;
  readonly bucket: string;
  /** Object prefix of the repository, without leading or trailing `/` ('' = the bucket's root). */
  readonly prefix: string;
}

const SCHEME = 'gs://';
/** Cloud Storage bucket names: 3–222 of `a-z 0-9 - _ .`, a letter or digit at each end, 63 at most between dots. */
const BUCKET = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;

/**
 * Parse a `gs://` repository location.
 * @throws TritonError INVALID_ARG naming what is wrong (no bucket, a bad bucket name, a bad path component)
 */
export function parseGsLocation(url: string): GsLocation {
  if (!url.startsWith(SCHEME)) throw err.wrongScheme(url, 'gs');
  const [bucket = '', ...rest] = url.slice(SCHEME.length).split('/');
  if (bucket === '') throw err.noBucket(url);
  if (!BUCKET.test(bucket) || bucket.split('.').some((p) => p.length === 0 || p.length > 63)) throw err.badGcsBucket(url, bucket);
  return {
    url,
    bucket,
    prefix: repositoryPrefix(
      url,
      rest.filter((p) => p !== ''),
    ),
  };
}
