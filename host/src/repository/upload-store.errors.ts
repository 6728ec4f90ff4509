/**
 * The error catalogue of uploaded models (the load API's file overrides, spec §3.1, and the upload
 * store, repository/upload-store.ts and repository/overrides.ts), one function per message: all
 * Warden's text (Triton keeps overrides in a temporary directory and has no such checks). Names
 * arrive already quoted for display (`shown`: JSON-quoted, cut at 80 characters, control characters
 * escaped); I/O failures are named by their errno code, never by a path (docs/tenancy.md "What
 * leaves the server").
 */
import { type TritonError, internal, invalidArg, notFound, unavailable } from '../contract/errors.js';

/** INVALID_ARG: a name that is not one plain file name; `what` says which (`model name`, `path component`). */
export function notPlainName(what: string, shown: string): TritonError {
  return invalidArg(`invalid ${what} ${shown}: must be a plain file name (no '/', '\\', control characters, '.' or '..', at most 255 bytes)`);
}

/** INVALID_ARG: a file override path that is empty or over `maxBytes` bytes. */
export function overridePathTooLong(shown: string, maxBytes: number): TritonError {
  return invalidArg(`invalid file override path ${shown}: must be a relative path of at most ${maxBytes} bytes`);
}

/** INVALID_ARG: a file override path with a component that is not a plain name. */
export function overridePathNotRelative(shown: string): TritonError {
  return invalidArg(`invalid file override path ${shown}: must be relative to the model directory, made of plain file names`);
}

/** INVALID_ARG: a file override path that is both a file and a directory of the upload. */
export function overridePathFileAndDir(shown: string): TritonError {
  return invalidArg(`invalid file override path ${shown}: it is both a file and a directory`);
}

/** INVALID_ARG: a namespace that is not a tenant id. */
export function namespaceInvalid(shown: string): TritonError {
  return invalidArg(`invalid namespace ${shown}`);
}

/** INVALID_ARG: an upload over `--max-upload-bytes`, bytes. */
export function uploadTooLarge(model: string, total: number, maxBytes: number): TritonError {
  return invalidArg(`failed to load '${model}': upload of ${total} bytes exceeds the limit of ${maxBytes} bytes`);
}

/** INTERNAL: a stored model whose pointer or generation is unreadable; `detail` an errno code or a path-free reason. */
export function storedModelDamaged(model: string, detail: string): TritonError {
  return internal(`stored model '${model}' is damaged: ${detail}`);
}

/** INVALID_ARG: a tenant operation on the operator namespace. */
export function operatorNotTenant(): TritonError {
  return invalidArg('the operator namespace is not a tenant');
}

/** UNAVAILABLE: uploads of a removed tenant of the same id are still being moved aside. */
export function tenantUploadsMoving(model: string): TritonError {
  return unavailable(`failed to load '${model}': the uploads of an earlier tenant of this id are being moved aside; retry shortly`);
}

/** INTERNAL: the store's own guard against a path that is not a plain name. */
export function storePathNotPlain(): TritonError {
  return internal('upload store: refusing a path that is not a plain name');
}

/** INTERNAL: the store's own guard against a path outside its root. */
export function storePathOutside(): TritonError {
  return internal('upload store: refusing a path outside the store');
}

/** UNAVAILABLE: the upload store's file system is full (ENOSPC / EDQUOT); `what` the action (`load`, `unload`). */
export function storeFull(what: string, model: string): TritonError {
  return unavailable(`failed to ${what} model '${model}': no space left for uploads`);
}

/** INTERNAL: any other store failure; `detail` an errno code or a path-free reason. */
export function storeFailed(what: string, model: string, detail: string): TritonError {
  return internal(`failed to ${what} model '${model}': ${detail}`);
}

/** INVALID_ARG: the load API's `config` parameter is not JSON; `detail` the JSON parser's message (Warden's text). */
export function configOverrideNotJson(model: string, detail: string): TritonError {
  return invalidArg(`failed to load '${model}': invalid 'config' parameter, not JSON: ${detail}`);
}

/** INVALID_ARG: a `file:` parameter whose value is not a string. */
export function overrideNotString(key: string): TritonError {
  return invalidArg(`parameter '${key}' must be a base64 string`);
}

/** INVALID_ARG: a `file_sha256:` parameter whose value is not a SHA-256 digest (Warden's extension of the load API). */
export function fileDigestInvalid(shown: string): TritonError {
  return invalidArg(`file digest for ${shown} must be its SHA-256 as 64 hexadecimal digits`);
}

/** INVALID_ARG: one path given both as bytes (`file:`) and by digest (`file_sha256:`). */
export function fileDigestAndBytes(shown: string): TritonError {
  return invalidArg(`file override path ${shown} is given both as bytes ('file:') and by digest ('file_sha256:')`);
}

/**
 * NOT_FOUND: a `file_sha256:` digest that none of the caller's own stored files has (another
 * tenant's are never consulted: docs/tenancy.md "Uploads by digest"), or whose blob is gone.
 */
export function fileDigestUnknown(model: string, shown: string, sha256: string): TritonError {
  return notFound(`failed to load '${model}': no stored file of this namespace has SHA-256 ${sha256} (${shown}); send its bytes as 'file:' instead`);
}

/** INVALID_ARG: a `file:` parameter whose value is not base64. */
export function overrideNotBase64(path: string): TritonError {
  return invalidArg(`file override '${path}' is not valid base64`);
}
