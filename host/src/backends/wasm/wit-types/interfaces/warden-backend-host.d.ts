/** @module Interface warden:backend/host@0.1.1 **/
/**
 * Writes a line to the model's log (`TRITONSERVER_LogMessage`). The host tags it with the
 * model name, version and instance. Each instance has a log budget per call into the
 * backend (start-up, each `execute`), shared with stdout and stderr: a byte budget (the
 * server's `maxLogBytes`, or the model parameter `log_limit_bytes`) and a message budget
 * (the server's `maxLogMessages`, 1024 by default; each `log` call counts as one message,
 * an empty one included, and so does each line written to stdout or stderr). The first
 * message past either budget ends logging for the rest of the call: later messages are
 * dropped and counted, and one warning at the end of the call says how much was dropped.
 */
export function log(level: LogLevel, message: string): void;
/**
 * Sends one response for the request `request` (`TRITONBACKEND_ResponseSend`): `ok` is a
 * response, `err` an error response. `final` sets `TRITONSERVER_RESPONSE_COMPLETE_FINAL`:
 * no further response may follow for that request.
 * 
 * Decoupled models (`model_transaction_policy { decoupled: true }`) may send any number of
 * responses per request, then exactly one final (spec §6.8); each is delivered to the client
 * as soon as this call returns. Non-decoupled models may send only one response, and it
 * must be final.
 * 
 * Errors: `not-found` for a handle that is not an in-flight request of this instance,
 * `invalid-arg` for a response after the final one, or one whose outputs do not match the
 * model configuration, `unsupported` for a non-final response on a non-decoupled model.
 */
export function sendResponse(request: RequestHandle, response: Result<Response, Error>, final: boolean): void;
/**
 * Marks the request `request` complete without a response
 * (`TRITONBACKEND_ResponseFactorySendFlags(FINAL)`): the flags-only final a decoupled model
 * sends after its last response. Same errors as `send-response`.
 */
export function sendFinal(request: RequestHandle): void;
/**
 * True if the client of request `request` went away or cancelled it
 * (`TRITONBACKEND_RequestIsCancelled`). A backend should then stop producing responses and
 * send the final flag. False for an unknown handle.
 */
export function isCancelled(request: RequestHandle): boolean;
/**
 * Reads a file of the model's version directory (`<model>/<version>/`), read-only.
 * `path` is relative to that directory with `/` separators (e.g. `labels.txt`,
 * `weights/layer0.bin`); absolute paths, `..` segments and symbolic links that lead outside
 * the directory are refused. The file must fit in the instance's memory limit.
 * 
 * Errors: `invalid-arg` for a refused path or something that is not a regular file,
 * `not-found` for a missing file, `unavailable` for a file larger than the limit or one the
 * host may not read, `internal` for other read failures. Error messages name paths relative
 * to the version directory only, never a host path.
 */
export function readFile(path: string): Uint8Array;
/**
 * Lists the regular files of the model's version directory, recursively, as relative paths
 * with `/` separators, sorted. Errors: `not-found` if the version directory is gone (e.g.
 * the model is being replaced), `unavailable` for a directory the host may not read,
 * `internal` for other read failures; messages name directories relative to the version
 * directory only.
 */
export function listFiles(): Array<string>;
export type Error = import('./warden-backend-types.js').Error;
export type Response = import('./warden-backend-types.js').Response;
export type RequestHandle = import('./warden-backend-types.js').RequestHandle;
/**
 * Log severity (`TRITONSERVER_LogLevel`, spec §6.5).
 * # Variants
 * 
 * ## `"info"`
 * 
 * ## `"warn"`
 * 
 * ## `"error"`
 * 
 * ## `"verbose"`
 */
export type LogLevel = 'info' | 'warn' | 'error' | 'verbose';
export type Result<T, E> = { tag: 'ok', val: T } | { tag: 'err', val: E };
