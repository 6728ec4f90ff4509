/**
 * The client's address for logs and audit events. A request a front-end thread forwarded
 * (threads/pool.ts) arrives on the internal unix socket, where the thread's
 * `x-warden-client-address` header is trusted and stored under {@link TRUSTED_CLIENT_ADDRESS};
 * on the public port that header means nothing and the socket's peer address is used.
 */
import type { FastifyRequest } from 'fastify';

/** Where the internal listener puts the forwarded client address on the raw request. */
export const TRUSTED_CLIENT_ADDRESS = Symbol('warden.trustedClientAddress');

/** The address of the client that sent `req` (IP, as Fastify's `req.ip`). */
export function clientAddressOf(req: FastifyRequest): string | undefined {
  const forwarded = (req.raw as unknown as Record<symbol, unknown>)[TRUSTED_CLIENT_ADDRESS];
  return typeof forwarded === 'string' ? forwarded : req.ip;
}
