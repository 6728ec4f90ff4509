/**
 * What a front-end thread does not serve itself goes to the main thread's full Fastify app over
 * its internal listener (a unix socket, threads/pool.ts) through undici: method, URL, headers and
 * status preserved, bodies streamed both ways. The client's address travels in
 * {@link CLIENT_ADDRESS_HEADER}, which the main thread trusts only on that socket.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { Pool } from 'undici';

import { CLIENT_ADDRESS_HEADER, INTERNAL_CLOSE_HEADER, NATIVE_ERROR_HEADER } from '../internal-listener.js';

export { CLIENT_ADDRESS_HEADER, INTERNAL_CLOSE_HEADER };

/** Request headers not forwarded: hop-by-hop (RFC 9110, section 7.6.1), `expect` (this thread answered it) and a client's own address claim. */
const DROP_REQUEST = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  CLIENT_ADDRESS_HEADER,
  NATIVE_ERROR_HEADER,
]);

/** Response headers this thread's own HTTP server writes itself, as the main thread's does: `Date`, keep-alive, framing. */
const DROP_RESPONSE = new Set(['date', 'keep-alive', 'transfer-encoding']);

/** A proxy to the main thread's internal listener at `socketPath`. */
export class MainProxy {
  private readonly pool: Pool;

  constructor(socketPath: string) {
    // Timeouts are the main thread's server's (request timeout, keep-alive) and the client's: none here.
    this.pool = new Pool('http://warden.internal', { socketPath, connections: 256, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
  }

  /**
   * Forward `req` and write the main thread's answer to `res`. Never throws: a failed forward
   * is answered 503 `{"error": ...}` (or the connection is destroyed once the answer had begun).
   * @param body the request body when this thread has already read it (a claimed request the
   *   main thread handed back); otherwise `req` is streamed
   */
  forward(req: IncomingMessage, res: ServerResponse, body?: Buffer): void {
    const raw = req.rawHeaders;
    const headers: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if (!DROP_REQUEST.has(raw[i]!.toLowerCase())) headers.push(raw[i]!, raw[i + 1]!);
    }
    headers.push(CLIENT_ADDRESS_HEADER, req.socket.remoteAddress ?? '');
    const h = req.headers;
    const streamed = body === undefined && (h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0'));
    if (body === undefined && !streamed) req.resume();
    const head = req.method === 'HEAD';
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    this.pool
      .request({
        method: req.method as 'GET',
        path: req.url ?? '/',
        headers,
        body: body ?? (streamed ? req : null),
        responseHeaders: 'raw',
        signal: abort.signal,
      })
      .then(
        (up) => {
          const rh = up.headers as unknown as string[];
          const out: string[] = [];
          for (let i = 0; i + 1 < rh.length; i += 2) {
            const k = rh[i]!.toLowerCase();
            if (k === INTERNAL_CLOSE_HEADER) {
              out.push('connection', 'close');
              continue;
            }
            // `connection: close` from the main thread ends the client's connection too, except on
            // HEAD: undici asks for close itself after a HEAD, which is not the server's answer.
            if (DROP_RESPONSE.has(k) || (k === 'connection' && (head || rh[i + 1]!.toLowerCase() !== 'close'))) continue;
            out.push(rh[i]!, rh[i + 1]!);
          }
          if (res.destroyed) return void up.body.destroy();
          res.writeHead(up.statusCode, out);
          pipeline(up.body, res, () => undefined);
        },
        () => {
          if (res.headersSent || res.destroyed) return void res.destroy();
          // undici's message can name the internal socket's path: never shown to a client
          const text = JSON.stringify({ error: "the server's main thread did not answer" });
          res.writeHead(503, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
          res.end(text);
        },
      );
  }

  /** Close the pool's connections (requests in flight finish first). */
  async close(): Promise<void> {
    await this.pool.close();
  }
}
