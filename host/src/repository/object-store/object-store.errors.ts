/**
 * The error catalogue of object-store model repositories (repository/object-store/): Triton's
 * wording where Triton has the case (core `filesystem/implementations/{s3,gcs,as}.h`), Warden's otherwise.
 * Object paths are named relative to their model (`<model>/<path>`), never by a local cache path;
 * store failures by the SDK's error name.
 */
import { type TritonError, internal, invalidArg, unavailable } from '../../contract/errors.js';

/** INVALID_ARG: a location that does not start with `<scheme>://` where that scheme is parsed. */
export function wrongScheme(url: string, scheme: 's3' | 'gs'): TritonError {
  return invalidArg(`not ${scheme === 's3' ? 'an' : 'a'} ${scheme}:// location: '${url}'`);
}

/** INVALID_ARG: an `s3://` location without a bucket (Triton's text). */
export function noBucket(url: string): TritonError {
  return invalidArg(`No bucket name found in path: ${url}`);
}

/** INVALID_ARG: `http://` / `https://` without `host:port`, or a port outside 1–65535. */
export function badEndpoint(url: string): TritonError {
  return invalidArg(`invalid s3 location '${url}': an endpoint is written s3://[http://|https://]host:port/bucket/path`);
}

/** INVALID_ARG: a bucket name S3 would not accept. */
export function badBucket(url: string, bucket: string): TritonError {
  return invalidArg(`invalid s3 location '${url}': '${bucket}' is not a bucket name (3-63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)`);
}

/** INVALID_ARG: a repository path (of any scheme) with a `.` / `..` component or a control character. */
export function badPathComponent(url: string): TritonError {
  return invalidArg(`invalid ${url.slice(0, 2)} location '${url}': a path component is '.', '..' or holds a control character`);
}

/** INVALID_ARG: a bucket name Google Cloud Storage would not accept. */
export function badGcsBucket(url: string, bucket: string): TritonError {
  return invalidArg(
    `invalid gs location '${url}': '${bucket}' is not a bucket name (3-63 of a-z, 0-9, '.', '-', '_', starting and ending with a letter or digit; up to 222 with dots, 63 between dots)`,
  );
}

/** INVALID_ARG: an `as://` location without `account/container` (Triton's text). */
export function azurePathInvalid(url: string): TritonError {
  return invalidArg(`Invalid azure storage path: ${url}`);
}

/** INVALID_ARG: a storage account name Azure would not accept (`from` says where the name came from). */
export function badAzureAccount(url: string, account: string, from: string): TritonError {
  return invalidArg(`invalid as location '${url}': '${account}' (${from}) is not a storage account name (3-24 of a-z, 0-9)`);
}

/** INVALID_ARG: a container name Azure would not accept. */
export function badAzureContainer(url: string, container: string): TritonError {
  return invalidArg(
    `invalid as location '${url}': '${container}' is not a container name (3-63 of a-z, 0-9, '-', starting and ending with a letter or digit, no '--')`,
  );
}

/** INVALID_ARG: an `AZURE_STORAGE_AUTH_TYPE` this build does not implement. */
export function azureAuthUnsupported(type: string): TritonError {
  return invalidArg(
    `AZURE_STORAGE_AUTH_TYPE=${JSON.stringify(type.slice(0, 40))} is not supported by this build; use AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING, or neither (anonymous)`,
  );
}

/** INVALID_ARG: the account of an `as://` location differs from the one of `AZURE_STORAGE_CONNECTION_STRING`. */
export function azureAccountMismatch(url: string, account: string, connected: string): TritonError {
  return invalidArg(`model repository '${url}' names storage account '${account}' but AZURE_STORAGE_CONNECTION_STRING is for account '${connected}'`);
}

/** INVALID_ARG: `AZURE_STORAGE_CONNECTION_STRING` that the Azure SDK cannot read (its text is not echoed: it holds a key). */
export function azureConnectionStringInvalid(): TritonError {
  return invalidArg('AZURE_STORAGE_CONNECTION_STRING cannot be read (expected BlobEndpoint=...;AccountName=...;AccountKey=... or a SAS form)');
}

/** INVALID_ARG: a `gs://` or `as://` location where only `s3://` is read (the shared upload store). */
export function schemeUnsupported(url: string, scheme: string): TritonError {
  return invalidArg(`'${url}': ${scheme}:// is not supported here; use s3:// (any S3-compatible store)`);
}

/** INTERNAL: the bucket cannot be reached with the credentials found (Triton's text, at start-up). */
export function clientCheckFailed(name: string, message: string): TritonError {
  return internal(`Unable to create S3 filesystem client. Check account credentials. Exception: '${name}' Message: '${message}'`);
}

/** INTERNAL: the container cannot be reached with the credentials found (Triton's text, with the reason, at start-up). */
export function azureClientCheckFailed(name: string, message: string): TritonError {
  return internal(`Unable to create Azure filesystem client. Check account credentials. Exception: '${name}' Message: '${message}'`);
}

/** INTERNAL: the bucket cannot be read with the credentials found (Triton's text, at start-up). */
export function gcsBucketCheckFailed(bucket: string, message: string): TritonError {
  return internal(`Could not get MetaData for bucket with name ${bucket} : ${message}`);
}

/** INTERNAL: a container listing failed (Triton's text); `dir` is the prefix listed. */
export function azureListFailed(dir: string, message: string): TritonError {
  return internal(`Failed to get contents of directory ${dir}:${message}`);
}

/** INTERNAL: a bucket listing failed (Triton's text); `where` is the `gs://bucket/prefix` listed. */
export function gcsListFailed(where: string, message: string): TritonError {
  return internal(`Could not list contents of directory at ${where} : ${message}`);
}

/** INTERNAL: a listing failed; `where` is the `s3://bucket/prefix` listed. */
export function listFailed(where: string, name: string, message: string): TritonError {
  return internal(`Failed to list objects with prefix ${where} due to exception: ${name}, error message: ${message}`);
}

/** INVALID_ARG: more models in one repository than Warden lists. */
export function tooManyModels(url: string, max: number): TritonError {
  return invalidArg(`model repository '${url}' lists more than ${max} models`);
}

/** INVALID_ARG: more objects under one model than Warden fetches. */
export function tooManyObjects(model: string, max: number): TritonError {
  return invalidArg(`failed to load '${model}': the model has more than ${max} objects in its object-store repository`);
}

/** INVALID_ARG: an object key below the model that is not a plain relative path; `shown` is JSON-quoted. */
export function objectKeyNotPlain(model: string, shown: string): TritonError {
  return invalidArg(
    `failed to load '${model}': object ${shown} is not a plain relative path (components must be plain file names; at most 1024 bytes and 32 levels)`,
  );
}

/** UNAVAILABLE: the model's objects were removed between listing and loading. */
export function modelNotInStore(model: string): TritonError {
  return unavailable(`failed to load '${model}': the model has no objects in its object-store repository`);
}

/** INTERNAL: one object could not be fetched; `reason` an SDK error name or errno code. */
export function objectFetchFailed(model: string, path: string, reason: string): TritonError {
  return internal(`failed to load '${model}': fetching '${model}/${path}' from the object store failed: ${reason}`);
}

/** INTERNAL: an object's bytes differ in length from its listing (it changed during the fetch). */
export function objectSizeChanged(model: string, path: string, listed: number): TritonError {
  return internal(`failed to load '${model}': object '${model}/${path}' changed while it was fetched (listed as ${listed} bytes); retry the load`);
}

/** UNAVAILABLE: a model larger than the whole repository cache (`--repository-cache-bytes`). */
export function modelLargerThanCache(model: string, bytes: number, max: number): TritonError {
  return unavailable(`failed to load '${model}': its ${bytes} bytes exceed the repository cache of ${max} bytes (--repository-cache-bytes)`);
}

/** UNAVAILABLE: the cache holds too many copies in use to fit the model. */
export function cacheFull(model: string, bytes: number, max: number): TritonError {
  return unavailable(
    `failed to load '${model}': the repository cache (${max} bytes, --repository-cache-bytes) is held by loaded models; ${bytes} more bytes do not fit`,
  );
}

/** INTERNAL: a key that is not a tenant model cannot be stored in the shared upload store. */
export function sharedKeyInvalid(model: string): TritonError {
  return internal(`failed to store '${model}' in the shared upload store: only tenant models are stored there`);
}

/** INTERNAL: a stored pointer that is not one Warden wrote; `what` names the part. */
export function sharedPointerInvalid(model: string, what: string): TritonError {
  return internal(`stored model '${model}' is damaged in the shared upload store: ${what}`);
}

/** INTERNAL: the shared upload store refused or failed a call; `reason` an SDK error name. */
export function sharedStoreFailed(model: string, reason: string): TritonError {
  return internal(`the shared upload store failed${model === '' ? '' : ` for '${model}'`}: ${reason}`);
}

/** INVALID_ARG: a stored model larger than `--max-upload-bytes` on this replica. */
export function sharedModelTooLarge(model: string, bytes: number, max: number): TritonError {
  return invalidArg(`failed to load '${model}': its stored files are ${bytes} bytes, more than this server accepts (${max}, --max-upload-bytes)`);
}

/** INTERNAL: a stored file whose bytes do not match its digest or size. */
export function sharedBlobDiffers(model: string, path: string): TritonError {
  return internal(`stored model '${model}' is damaged in the shared upload store: file '${path}' does not match its digest`);
}
