/**
 * `--model-repository=as://account/container/path` as Triton reads it (core
 * `filesystem/implementations/as.h`, `AS_URL_PATTERN`: `as://([^/]+)/([^/?]+)(?:/([^?]*))?(\?.*)?`;
 * a `.blob.core.windows.net` suffix of the account is dropped, a `?query` is ignored, and
 * `AZURE_STORAGE_ACCOUNT`, when set, names the account instead of the location). Repeated slashes
 * in the path collapse and trailing ones are dropped, as for `s3://`. Warden is stricter than
 * Triton where Triton would guess: account and container must be valid Azure names, and a path
 * component may not be `.` or `..` or hold a control character.
 */
import * as err from './object-store.errors.js';
import { repositoryPrefix } from './s3-location.js';

/** A parsed `as://` repository location. */
export interface AsLocation {
  /** The location as given (for logs). */
  readonly url: string;
  /** The storage account: `AZURE_STORAGE_ACCOUNT` when set, else the location's. */
  readonly account: string;
  readonly container: string;
  /** Blob-name prefix of the repository, without leading or trailing `/` ('' = the container's root). */
  readonly prefix: string;
}

const PATTERN = /^as:\/\/([^/]+)\/([^/?]+)(?:\/([^?]*))?(\?.*)?$/s;
const ACCOUNT = /^[a-z0-9]{3,24}$/;
const CONTAINER = /^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/;
const HOST_SUFFIX = '.blob.core.windows.net';

/**
 * Parse an `as://` repository location; `env` supplies `AZURE_STORAGE_ACCOUNT`.
 * @throws TritonError INVALID_ARG naming what is wrong (Triton's "Invalid azure storage path", a bad account or container name, a bad path component)
 */
export function parseAsLocation(url: string, env: NodeJS.ProcessEnv = process.env): AsLocation {
  const m = PATTERN.exec(url);
  if (!m) throw err.azurePathInvalid(url);
  const host = m[1]!;
  const fromEnv = env.AZURE_STORAGE_ACCOUNT || undefined;
  const account = fromEnv ?? (host.endsWith(HOST_SUFFIX) ? host.slice(0, -HOST_SUFFIX.length) : host);
  if (!ACCOUNT.test(account)) throw err.badAzureAccount(url, account, fromEnv !== undefined ? 'AZURE_STORAGE_ACCOUNT' : 'the location');
  const container = m[2]!;
  if (!CONTAINER.test(container)) throw err.badAzureContainer(url, container);
  return {
    url,
    account,
    container,
    prefix: repositoryPrefix(
      url,
      (m[3] ?? '').split('/').filter((p) => p !== ''),
    ),
  };
}
