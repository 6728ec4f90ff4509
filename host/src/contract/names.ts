/**
 * Model names as they enter the server (URL segments of every model endpoint and of the
 * repository extension). A model name is a directory name in Triton's repository layout
 * (spec §5.1), so it must be one plain path component; Warden checks it once, where it enters
 * (the data plane), so that a name can never become a path outside Warden's own directories.
 */

/** Longest accepted model name, in UTF-8 bytes (a file name component on Linux). */
export const MAX_MODEL_NAME_BYTES = 255;

/**
 * Why `name` cannot be a model name, or undefined if it can: empty, longer than
 * {@link MAX_MODEL_NAME_BYTES}, `.` or `..`, containing `/` or `\`, NUL or any control
 * character (C0, DEL, C1), or not well-formed Unicode (lone surrogates).
 */
export function modelNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'it is empty';
  if (Buffer.byteLength(name, 'utf8') > MAX_MODEL_NAME_BYTES) return `it is longer than ${MAX_MODEL_NAME_BYTES} bytes`;
  if (name === '.' || name === '..') return `'.' and '..' are not model names`;
  if (/[/\\]/.test(name)) return 'it contains a path separator';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return 'it contains a control character';
  if (/\p{Surrogate}/u.test(name)) return 'it is not well-formed Unicode';
  return undefined;
}

/** A tenant id, as a regular-expression fragment: 1–64 of `[A-Za-z0-9_-]`, not starting with `-` (nor `.`, which the set excludes). */
export const TENANT_ID_PATTERN = '[A-Za-z0-9_][A-Za-z0-9_-]{0,63}';
/** Valid tenant id (see {@link TENANT_ID_PATTERN}); a tenant's namespace and its directory name. */
export const TENANT_ID_RE = new RegExp(`^${TENANT_ID_PATTERN}$`);
