/**
 * `--model-repository=s3://...` as Triton reads it (core `filesystem/implementations/s3.h`,
 * `CleanPath` and `ParsePath`): `s3://bucket/path` for AWS, or
 * `s3://[http://|https://]host:port/bucket/path` for an S3-compatible store at that endpoint
 * (plain HTTP unless `https://` is given). Repeated slashes collapse and trailing ones are dropped.
 * Warden is stricter than Triton where Triton would guess: a bucket must be a valid S3 bucket name
 * (3–63 of `a-z 0-9 . -`, starting and ending with a letter or digit), and a path component may not
 * be `.` or `..` or hold a control character.
 */
import * as err from './object-store.errors.js';

/** A parsed `s3://` repository location. */
export interface S3Location {
  /** The location as given (for logs). */
  readonly url: string;
  /** `http://host:port` / `https://host:port` of an S3-compatible store; undefined = AWS (or `AWS_ENDPOINT_URL_S3`). */
  readonly endpoint: string | undefined;
  readonly bucket: string;
  /** Key prefix of the repository, without leading or trailing `/` ('' = the bucket's root). */
  readonly prefix: string;
}

const SCHEME = 's3://';
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const ENDPOINT = /^([0-9A-Za-z.-]+):([0-9]{1,5})$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** True when `spec` names an object-store repository of any scheme Warden knows (`s3://`, `gs://`, `as://`). */
export function isObjectStoreUrl(spec: string): boolean {
  return /^(s3|gs|as):\/\//.test(spec);
}

/**
 * Parse an `s3://` repository location.
 * @throws TritonError INVALID_ARG naming what is wrong (no bucket, a bad bucket name, a bad port, a bad path component)
 */
export function parseS3Location(url: string): S3Location {
  if (!url.startsWith(SCHEME)) throw err.wrongScheme(url, 's3');
  let rest = url.slice(SCHEME.length);
  const scheme = ['https://', 'http://'].find((s) => rest.startsWith(s));
  if (scheme !== undefined) rest = rest.slice(scheme.length);
  const parts = rest.split('/').filter((p) => p !== '');
  if (parts.length === 0) throw err.noBucket(url);
  let endpoint: string | undefined;
  const host = ENDPOINT.exec(parts[0]!);
  if (host) {
    const port = Number(host[2]);
    if (port < 1 || port > 65535) throw err.badEndpoint(url);
    endpoint = `${scheme ?? 'http://'}${host[1]}:${port}`;
    parts.shift();
    if (parts.length === 0) throw err.noBucket(url);
  } else if (scheme !== undefined) {
    throw err.badEndpoint(url);
  }
  const bucket = parts.shift()!;
  if (!BUCKET.test(bucket) || bucket.includes('..')) throw err.badBucket(url, bucket);
  return { url, endpoint, bucket, prefix: repositoryPrefix(url, parts) };
}

/**
 * The key prefix of a repository location's path components (empty ones already dropped), for
 * every scheme: joined by `/`.
 * @throws TritonError INVALID_ARG when a component is `.` or `..` or holds a control character
 */
export function repositoryPrefix(url: string, parts: readonly string[]): string {
  for (const p of parts) if (p === '.' || p === '..' || CONTROL.test(p)) throw err.badPathComponent(url);
  return parts.join('/');
}
