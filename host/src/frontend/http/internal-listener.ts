/**
 * The internal HTTP listener: a `node:http` server on a unix socket in a private 0700 temp
 * directory whose request listener is the public server's (fast path, then Fastify). What a
 * front-end thread (threads/) or the native data path (data-path/) does not serve itself reaches
 * the full app here. Only this process can reach the socket, so the client address header those
 * forwarders add (`x-warden-client-address`) is trusted here alone (client-address.ts).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { type RequestListener, type Server, type ServerResponse, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TRUSTED_CLIENT_ADDRESS } from './client-address.js';
import { writeAnswer } from './claim.js';
import type { HttpAnswer } from './routing.js';

/** The longest error message a native error request may carry (bytes). */
const MAX_NATIVE_ERROR_BYTES = 64 * 1024;

/** The header a forwarder names the client's address in (trusted only on the internal socket). */
export const CLIENT_ADDRESS_HEADER = 'x-warden-client-address';

/**
 * The internal listener renames a `connection: close` the app answers with to this: the internal
 * connection then stays open while the rest of the request body arrives (an early answer, e.g. a
 * body over the input limit, would otherwise end in EPIPE before the forwarder sees it), and the
 * forwarder closes its client's connection as the answer asked.
 */
export const INTERNAL_CLOSE_HEADER = 'x-warden-connection';

/**
 * The header with which the native data path asks for a backend error's answer (its Triton error
 * code, as `TRITONSERVER_Error_Code`; the body is the message): honoured on the data path's
 * internal listener only, and dropped from every client request by each forwarder.
 */
export const NATIVE_ERROR_HEADER = 'x-warden-native-error';

/** Renders the answer to a backend error the native data path met (code: `TRITONSERVER_Error_Code`). */
export type NativeErrorRenderer = (code: number, message: string) => HttpAnswer;

/**
 * With {@link NATIVE_ERROR_HEADER}, names the protocol of the call that failed: `grpc` asks for
 * the gRPC frontend's status and message ({@link NativeGrpcErrorRenderer}), answered as JSON
 * `{"code": <gRPC status>, "message": ...}` (native/rust/data-path/src/grpc.rs reads it).
 */
export const NATIVE_ERROR_PROTOCOL_HEADER = 'x-warden-native-error-protocol';

/** Renders a backend error the native data path met on a gRPC call: the gRPC status and message a client gets. */
export type NativeGrpcErrorRenderer = (code: number, message: string) => { code: number; message: string };

/** Timeouts of the public server, applied to the internal one too. */
export interface InternalServerSettings {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
}

/**
 * On the internal listener: an answer's `connection: close` (Fastify's, for a body it could not
 * read, or while closing) is renamed to {@link INTERNAL_CLOSE_HEADER}, in place.
 */
function keepInternalConnection(res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    const last = rest[rest.length - 1];
    if (last && typeof last === 'object' && !Array.isArray(last)) {
      const renamed: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(last)) {
        if (k.toLowerCase() === 'connection' && String(v).toLowerCase() === 'close') renamed[INTERNAL_CLOSE_HEADER] = 'close';
        else renamed[k] = v;
      }
      rest[rest.length - 1] = renamed;
    }
    const set = this.getHeader('connection');
    if (typeof set === 'string' && set.toLowerCase() === 'close') {
      this.removeHeader('connection');
      this.setHeader(INTERNAL_CLOSE_HEADER, 'close');
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).call(this, status, ...rest);
  } as ServerResponse['writeHead'];
}

/** A running internal listener. */
export class InternalListener {
  /** Requests that reached it. */
  requests = 0;
  /** Answers the native data path's error requests for gRPC calls ({@link NATIVE_ERROR_PROTOCOL_HEADER}); unset: none are made. */
  grpcErrors?: NativeGrpcErrorRenderer;

  private constructor(
    private readonly server: Server,
    private readonly dir: string,
    /** Its unix socket (the directory is removed on close). */
    readonly socketPath: string,
  ) {}

  /**
   * Listens on a new socket in a new private directory.
   * @param name the socket's file name (`main.sock`, `data-path.sock`)
   * @param nativeErrors answers the native data path's error requests ({@link NATIVE_ERROR_HEADER});
   *   without it the header is dropped like any forwarded client's
   * @throws Error when the socket cannot be made (the directory is removed again)
   */
  static async start(listener: RequestListener, s: InternalServerSettings, name: string, nativeErrors?: NativeErrorRenderer): Promise<InternalListener> {
    const dir = mkdtempSync(join(tmpdir(), 'warden-http-'));
    chmodSync(dir, 0o700);
    const socketPath = join(dir, name);
    const server = createServer(
      { headersTimeout: s.headersTimeout, requestTimeout: s.requestTimeout, connectionsCheckingInterval: s.connectionsCheckingInterval },
      (req, res) => {
        // Trusted here only: this socket is reachable by this process alone (0700 directory).
        const a = req.headers[CLIENT_ADDRESS_HEADER];
        delete req.headers[CLIENT_ADDRESS_HEADER];
        (req as unknown as Record<symbol, unknown>)[TRUSTED_CLIENT_ADDRESS] = typeof a === 'string' ? a : undefined;
        self.requests++;
        keepInternalConnection(res);
        const nativeError = req.headers[NATIVE_ERROR_HEADER];
        const protocol = req.headers[NATIVE_ERROR_PROTOCOL_HEADER];
        delete req.headers[NATIVE_ERROR_HEADER];
        delete req.headers[NATIVE_ERROR_PROTOCOL_HEADER];
        if (nativeErrors && typeof nativeError === 'string') {
          const chunks: Buffer[] = [];
          let size = 0;
          req.on('data', (c: Buffer) => {
            size += c.length;
            if (size <= MAX_NATIVE_ERROR_BYTES) chunks.push(c);
          });
          req.on('end', () => {
            const message = Buffer.concat(chunks).toString('utf8');
            const grpc = protocol === 'grpc' ? self.grpcErrors : undefined;
            if (grpc) {
              const body = JSON.stringify(grpc(Number(nativeError), message));
              writeAnswer(res, { status: 200, headers: { 'content-type': 'application/json' }, body });
            } else writeAnswer(res, nativeErrors(Number(nativeError), message));
          });
          return;
        }
        listener(req, res);
      },
    );
    server.keepAliveTimeout = s.keepAliveTimeout;
    const self = new InternalListener(server, dir, socketPath);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => (server.off('error', reject), resolve()));
      });
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return self;
  }

  /** Closes the listener and its connections, and removes its directory. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    rmSync(this.dir, { recursive: true, force: true });
  }
}
