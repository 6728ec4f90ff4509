/**
 * `GET /v2/models/{m}[/versions/{v}]/log[?since=<seq>]`: the model's own log (dataplane
 * `ServerApi.modelLog`; docs/tenant-guide.md "Your model's log"), in the `logging` restricted group.
 */
import type { FastifyRequest } from 'fastify';
import { logSinceInvalid } from './http.errors.js';

/**
 * The `since` query parameter of a log read: lines after this seq (absent: 0, every kept line).
 * @throws TritonError INVALID_ARG for anything but one non-negative integer
 */
export function logSince(q: FastifyRequest): number {
  const raw = (q.query as Record<string, unknown> | undefined)?.since;
  if (raw === undefined) return 0;
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) throw logSinceInvalid();
  return Number(raw);
}
