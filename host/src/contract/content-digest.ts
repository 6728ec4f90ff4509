/**
 * The SHA-256 of uploaded bytes, computed once per buffer: an upload's file is hashed for the
 * audit log (dataplane/repository.ts) and named by it in the upload store's blobs
 * (repository/upload-blobs.ts); both ask for the same buffer's digest, and the second gets the
 * first's. Hashed on the thread pool (WebCrypto), not the event loop: an upload may be megabytes.
 * The buffer must not change after it was first hashed (uploads are never written to).
 */
import { webcrypto } from 'node:crypto';

const digests = new WeakMap<Uint8Array, Promise<string>>();

/** SHA-256 of `data`, hex (memoized by the buffer object). */
export function sha256Of(data: Uint8Array): Promise<string> {
  let p = digests.get(data);
  if (!p) {
    p = webcrypto.subtle.digest('SHA-256', data).then((d) => Buffer.from(d).toString('hex'));
    digests.set(data, p);
  }
  return p;
}
