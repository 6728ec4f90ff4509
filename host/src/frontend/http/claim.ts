/**
 * The claim rules of the `/infer` fast paths: which requests a request listener ahead
 * of Fastify may serve itself with Fastify's exact answer, and how such an answer is written.
 * Shared by the main thread's fast path (fast-path.ts) and the front-end threads (threads/worker.ts),
 * so both claim the same requests and write the same bytes. Light imports only: a front-end
 * thread loads this module without the data plane.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { chooseEncoding } from './compression.js';
import type { HttpAnswer } from './routing.js';

/** The infer URLs the fast path claims; find-my-way maps exactly these to the `/infer` routes with the same parameters. */
const INFER_URL = /^\/v2\/models\/([A-Za-z0-9_][A-Za-z0-9_.-]{0,254})(?:\/versions\/([0-9]{1,15}))?\/infer$/;

/** A claimed infer URL: the model name and the requested version (-1: the model's version policy). */
export interface InferRoute {
  model: string;
  version: number;
}

/** Match a request URL against {@link INFER_URL}. @returns undefined for every URL the fast path leaves to Fastify */
export function matchInferUrl(url: string | undefined): InferRoute | undefined {
  if (url === undefined || url.length > 320) return undefined;
  const m = INFER_URL.exec(url);
  if (!m) return undefined;
  return { model: m[1]!, version: m[2] === undefined ? -1 : Number(m[2]) };
}

/**
 * Whether a fast path may serve `req` with Fastify's exact answer (headers only; the URL is
 * matched separately). Every condition is a header Fastify's path would act on differently.
 * @param maxBodyBytes claimed only with a `Content-Length` below this (bytes)
 */
export function plainRequest(req: IncomingMessage, maxBodyBytes: number): boolean {
  const h = req.headers;
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return false;
  const length = h['content-length'];
  if (length === undefined || !(Number(length) < maxBodyBytes)) return false;
  const type = h['content-type'];
  if (type !== undefined && type !== 'application/json' && type !== 'application/octet-stream') return false;
  const accept = h['accept-encoding'];
  return accept === undefined || chooseEncoding(accept) === 'identity';
}

/**
 * Write `answer` as the Fastify path does: its headers, then `vary` (compression's onSend sets it
 * on a successful infer answer, the only kind compressed; never on an error) and `content-length`.
 */
export function writeAnswer(res: ServerResponse, answer: HttpAnswer): void {
  res.writeHead(answer.status, answerHeaders(answer));
  res.end(answer.body);
}

/** The headers {@link writeAnswer} writes for `answer` (its own, `vary`, `content-length`); `answer.headers` gains them. */
export function answerHeaders(answer: HttpAnswer): Record<string, string> {
  const headers = answer.headers;
  if (answer.status < 400) headers.vary = 'Accept-Encoding';
  headers['content-length'] = String(Buffer.byteLength(answer.body));
  return headers;
}

/** A 400 `{"error": ...}` for a request the HTTP parser refused; the connection is closed (every HTTP listener's `clientError`). */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const message =
    err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH' || err.code === 'HPE_INVALID_TRANSFER_ENCODING'
      ? "Transfer-Encoding can't be present with Content-Length"
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? 'Request Header Fields Too Large'
        : 'Bad Request';
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const body = JSON.stringify({ error: message });
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
