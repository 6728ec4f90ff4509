/**
 * Triton error codes (spec §1.2, enum values §6.5) and the access errors of tenancy, independent of
 * any transport: each frontend maps them to its own statuses (HTTP: frontend/http/status.ts;
 * gRPC: frontend/grpc/status.ts).
 *
 * Every error that can reach a client is a {@link TritonError}; anything else that escapes a
 * handler is reported as INTERNAL by the frontend.
 */

/** `TRITONSERVER_Error_Code` names; the numeric value is the index in {@link ERROR_CODES}. */
export type ErrorCode = 'UNKNOWN' | 'INTERNAL' | 'NOT_FOUND' | 'INVALID_ARG' | 'UNAVAILABLE' | 'UNSUPPORTED' | 'ALREADY_EXISTS' | 'CANCELLED';

/** `TRITONSERVER_Error_Code` in C enum order: `ERROR_CODES[n]` is the name of value n. */
export const ERROR_CODES: readonly ErrorCode[] = [
  'UNKNOWN',
  'INTERNAL',
  'NOT_FOUND',
  'INVALID_ARG',
  'UNAVAILABLE',
  'UNSUPPORTED',
  'ALREADY_EXISTS',
  'CANCELLED',
];

/** An error carrying a Triton error code; `message` follows Triton's wording where the spec gives it. */
export class TritonError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TritonError';
  }
}

/** Shorthand constructors, e.g. `invalidArg("unexpected shape ...")`. */
export const invalidArg = (msg: string) => new TritonError('INVALID_ARG', msg);
export const notFound = (msg: string) => new TritonError('NOT_FOUND', msg);
export const unavailable = (msg: string) => new TritonError('UNAVAILABLE', msg);
export const unsupported = (msg: string) => new TritonError('UNSUPPORTED', msg);
export const internal = (msg: string) => new TritonError('INTERNAL', msg);

/**
 * What Triton's JSON wrapper (`triton_json.h`) reports for a member of the wrong type or a missing
 * one, behind the frontend's `Unable to parse '<field>'` prefix (RETURN_MSG_IF_ERR: `MSG: error`).
 * INTERNAL (500), as the wrapper's errors are (spec §1.2).
 * @param field the member as Triton names it (`'shape'`, `'sequence_start'`, ...)
 * @param expected the JSON type read: `'missing'` for an absent member
 */
export function jsonAccessError(
  field: string,
  expected: 'string' | 'boolean' | 'array' | 'object' | 'unsigned-integer' | 'signed-integer' | 'missing',
  prefix = 'Unable to parse',
): TritonError {
  const what = expected === 'missing' ? `attempt to access non-existing object member '${field}'` : `attempt to access JSON non-${expected} as ${expected}`;
  return internal(`${prefix} '${field}': ${what}`);
}

/** The CANCELLED error of a request whose caller went away (Triton's wording). */
export const cancelled = (): TritonError => new TritonError('CANCELLED', 'Request was cancelled');

/**
 * What an {@link AccessError} refuses: the caller is not known (`unauthenticated`), may not do
 * this or is over a quota no retry can meet (`forbidden`), or is over a rate or concurrency limit
 * that frees up with time (`exhausted`). HTTP answers 401 / 403 / 429, gRPC UNAUTHENTICATED /
 * PERMISSION_DENIED / RESOURCE_EXHAUSTED (DESIGN "Multi-tenancy").
 */
export type AccessKind = 'unauthenticated' | 'forbidden' | 'exhausted';

/**
 * An error about who may do what, rather than about the request's content: authentication,
 * permission or quota, and rate / concurrency limits (with the seconds to wait before retrying).
 * Triton's error codes have no such distinction, so it carries its {@link AccessKind}; its Triton
 * code (UNAVAILABLE when exhausted, else INVALID_ARG) is what in-process callers see.
 */
export class AccessError extends TritonError {
  constructor(
    readonly kind: AccessKind,
    message: string,
    /** Seconds a client should wait before retrying (`exhausted`). */
    readonly retryAfterS?: number,
  ) {
    super(kind === 'exhausted' ? 'UNAVAILABLE' : 'INVALID_ARG', message);
    this.name = 'AccessError';
  }
}

/** `AccessError` shorthand: not permitted, or over a quota no retry can meet. */
export const forbidden = (msg: string) => new AccessError('forbidden', msg);
/** `AccessError` shorthand: over a rate or concurrency limit; retry after `retryAfterS` seconds. */
export const exhausted = (msg: string, retryAfterS: number) => new AccessError('exhausted', msg, retryAfterS);

/** Wraps any thrown value as a TritonError (non-Triton errors become INTERNAL). */
export function asTritonError(e: unknown): TritonError {
  if (e instanceof TritonError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new TritonError('INTERNAL', msg);
}
