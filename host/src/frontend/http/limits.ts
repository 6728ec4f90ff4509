/**
 * HTTP connection limits: how long a client may take to send its headers and its whole request,
 * and how many connections are open at once. Fastify leaves request timeouts off by default, so
 * without these a slow client holds a connection (and its buffers) for as long as it likes.
 */

export interface HttpLimits {
  /** Time from connection (or the previous request) to the end of the headers, ms. */
  headerTimeoutMs: number;
  /** Time to receive the whole request, headers and body, ms (responses are not bounded: decoupled streams last). */
  requestTimeoutMs: number;
  /** Connections accepted at once; further ones are closed by the kernel-side accept. */
  maxConnections: number;
  /**
   * Largest JSON inference response, bytes (`--http-max-json-output-bytes`): a response whose JSON
   * outputs could print longer is refused (400) before it is built. Default 64 MiB.
   */
  maxJsonOutputBytes?: number;
  /**
   * Connections one client address may hold open at once (`--http-max-connections-per-address`;
   * an IPv6 address counts by its /64), checked on accept, before any request is read or
   * authenticated (connection-budget.ts); 0 = no per-address cap. Default 128, well below
   * `maxConnections`, so one address cannot take the whole budget.
   */
  maxConnectionsPerAddress?: number;
}

/** 10 s for headers, 120 s for the whole request (a 64 MiB body at ~4 Mbit/s), 4096 connections (128 per client address), 64 MiB JSON responses. */
export const DEFAULT_HTTP_LIMITS: Readonly<Required<HttpLimits>> = Object.freeze({
  headerTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  maxConnections: 4096,
  maxJsonOutputBytes: 64 * 1024 * 1024,
  maxConnectionsPerAddress: 128,
});

/**
 * How often Node checks connections for the two timeouts, ms: a quarter of the shorter one,
 * between 10 ms and Node's default 30 s, so a timeout fires within 25 % of its value.
 */
export function connectionsCheckingInterval(limits: HttpLimits): number {
  return Math.min(30_000, Math.max(10, Math.floor(Math.min(limits.headerTimeoutMs, limits.requestTimeoutMs) / 4)));
}
