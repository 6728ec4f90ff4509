/**
 * A front-end thread (`--http-threads`): its own HTTP listener on the public
 * host:port (an SO_REUSEPORT socket from the main thread). It claims plain `/infer` requests by
 * the fast path's rules (claim.ts), reads the body, hands it over its ring to the main thread
 * (which authenticates, admits, infers and renders: threads/pool.ts → fast-path.ts#serveClaimed)
 * and writes the answer; everything else, and every claimed request the main thread hands back
 * (failed authentication, closing, full ring), is proxied to the main thread's Fastify app.
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { readBody } from '../body.js';
import { answerClientError, matchInferUrl, plainRequest, writeAnswer } from '../claim.js';
import { requestSatisfies } from '../restricted.js';
import { OFFLOAD_BYTES } from '../codec/pool.js';
import type { HttpAnswer } from '../routing.js';
import { type FrontendThreadData, type FromThread, type ToThread, readAnswer, requestBytes, writeRequest } from './messages.js';
import { ConnectionBudget } from '../connection-budget.js';
import { MainProxy } from './proxy.js';
import { RingReader, RingWriter, SLOT_PAYLOAD } from './ring.js';

const data = workerData as FrontendThreadData;
const port = parentPort!;
const post = (m: FromThread) => port.postMessage(m);
const toMain = new RingWriter(data.toMain);
const fromMain = new RingReader(data.toThread);
const proxy = new MainProxy(data.socketPath);
/** Claimed only with a body that fits a slot (with its fields) and the input limit; larger ones are proxied. */
const maxClaim = Math.min(OFFLOAD_BYTES, SLOT_PAYLOAD - 1024, data.maxInputSize + 1);

interface Pending {
  req: IncomingMessage;
  res: ServerResponse;
  body: Buffer;
}
const pending = new Map<number, Pending>();
let nextId = 0;
let draining = false;

function deliver(id: number, answer: HttpAnswer | undefined): void {
  const p = pending.get(id);
  if (!p) return;
  pending.delete(id);
  if (answer === undefined) return proxy.forward(p.req, p.res, p.body);
  if (p.res.destroyed || p.res.headersSent) return;
  writeAnswer(p.res, answer);
}

function serve(req: IncomingMessage, res: ServerResponse): void {
  const route = req.method === 'POST' && data.claim && !draining ? matchInferUrl(req.url) : undefined;
  const ihcl = req.headers['inference-header-content-length'];
  // a request with a client trace context goes to the main thread whole (the ring carries no such header)
  if (!route || !plainRequest(req, maxClaim) || Array.isArray(ihcl) || req.headers.traceparent !== undefined) return proxy.forward(req, res);
  // without the `inference` header of --http-restricted-api: the main thread's Fastify answers 403
  if (data.claimRestriction && !requestSatisfies(req, data.claimRestriction)) return proxy.forward(req, res);
  readBody(req, data.maxInputSize, (err, body) => {
    if (err) return void res.destroy(); // the client's stream failed: nobody to answer
    nextId = (nextId + 1) >>> 0;
    const id = nextId;
    const h = req.headers;
    const meta = {
      id,
      model: route.model,
      version: route.version,
      headerLength: ihcl,
      authorization: h.authorization,
      clientAddress: req.socket.remoteAddress ?? '',
    };
    const n = requestBytes(meta, body!.length);
    if (n === undefined || !toMain.write(n, (b) => writeRequest(b, meta, body!))) return proxy.forward(req, res, body);
    pending.set(id, { req, res, body: body! });
    res.once('close', () => {
      if (pending.delete(id)) post({ t: 'cancel', id });
    });
  });
}

const server = createServer(
  {
    headersTimeout: data.server.headersTimeout,
    requestTimeout: data.server.requestTimeout,
    connectionsCheckingInterval: data.server.connectionsCheckingInterval,
  },
  serve,
);
server.keepAliveTimeout = data.server.keepAliveTimeout;
server.maxConnections = data.server.maxConnections;
new ConnectionBudget(data.connections, data.server.maxConnections).attach(server, ConnectionBudget.threadSlot(data.index));
server.on('clientError', answerClientError);

void fromMain.start(
  (m) => {
    const a = readAnswer(m);
    deliver(a.id, a.answer);
  },
  (e) => console.error(`front-end thread ${data.index}: bad ring message`, e),
);

port.on('message', (m: ToThread) => {
  if (m.t === 'answer') {
    deliver(m.id, {
      status: m.status,
      headers: m.headers,
      body: typeof m.body === 'string' ? m.body : Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength),
    });
  } else if (m.t === 'fallback') {
    deliver(m.id, undefined);
  } else if (m.t === 'drain') {
    draining = true;
    // Stops accepting; idle keep-alive connections close now, busy ones after their answer.
    server.close(() => {
      fromMain.close();
      void proxy.close().finally(() => post({ t: 'drained' }));
    });
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.once('close', () => clearInterval(sweep));
  } else if (m.t === 'crash') {
    setImmediate(() => {
      throw new Error(`front-end thread ${data.index}: crash requested (test hook)`);
    });
  }
});

server.listen({ fd: data.fd }, () => post({ t: 'listening' }));
