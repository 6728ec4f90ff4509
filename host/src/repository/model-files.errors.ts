/**
 * The error catalogue of config-named model files (repository/model-files.ts: files a model config
 * names, opened beneath the model directory), one function per message: all Warden's text, naming
 * the config field and the name as the config gave it (`shown`: quoted for display), never a host
 * path. The refusals after a name passed its syntax check are repository/model-files.ts
 * ModelFileError.
 */
import { type TritonError, invalidArg } from '../contract/errors.js';

/** INVALID_ARG: an empty name. */
export function fileNameEmpty(field: string): TritonError {
  return invalidArg(`${field} is empty: it must name a file inside the model directory`);
}

/** INVALID_ARG: an absolute name (POSIX or a drive letter). */
export function fileNameAbsolute(field: string): TritonError {
  return invalidArg(`${field} is an absolute path: it must be a path relative to the model directory`);
}

/** INVALID_ARG: a name over `max` characters. */
export function fileNameTooLong(field: string, max: number): TritonError {
  return invalidArg(`${field} is longer than ${max} characters`);
}

/** INVALID_ARG: a name with a backslash or a control character. */
export function fileNameBadCharacters(field: string, shown: string): TritonError {
  return invalidArg(`${field} ${shown} may not contain backslashes or control characters`);
}

/** INVALID_ARG: a name with `..`, `.` or empty segments. */
export function fileNameEscapes(field: string, shown: string): TritonError {
  return invalidArg(`${field} ${shown} must be a path inside the model directory (no '..', '.' or empty segments)`);
}

/** INVALID_ARG: config-named files need Linux (openat2 / O_PATH). */
export function fileNeedsLinux(field: string, shown: string): TritonError {
  return invalidArg(`${field} ${shown}: config-named files can be opened only on Linux`);
}

/** INVALID_ARG: the model directory itself cannot be read; `errno` its code, if any. */
export function modelDirUnreadable(field: string, shown: string, errno?: string): TritonError {
  return invalidArg(`${field} ${shown}: the model directory cannot be read${errno ? ` (${errno})` : ''}`);
}

/** INVALID_ARG: a byte-count parameter outside [1, ceiling]. */
export function byteCapInvalid(key: string, ceiling: number, shown: string): TritonError {
  return invalidArg(`parameter '${key}' must be a byte count in [1, ${ceiling}], got ${shown}`);
}
