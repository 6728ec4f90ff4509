/**
 * HTTP statuses of Warden's errors, the HTTP frontend's own mapping (the errors themselves are
 * transport-neutral: contract/errors.ts): a Triton error code by `HttpCodeFromError` (spec §1.2),
 * an access refusal by its kind (401 / 403 / 429, DESIGN "Multi-tenancy").
 */
import type { AccessKind, ErrorCode } from '../../contract/errors.js';

/** HTTP status for a Triton error code (`HttpCodeFromError`, spec §1.2). */
export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case 'INTERNAL':
      return 500;
    case 'NOT_FOUND':
      return 404;
    case 'UNAVAILABLE':
      return 503;
    case 'UNSUPPORTED':
      return 501;
    default:
      return 400;
  }
}

/** HTTP status for an access refusal: 401 unauthenticated, 403 forbidden, 429 exhausted. */
export function accessHttpStatus(kind: AccessKind): 401 | 403 | 429 {
  switch (kind) {
    case 'unauthenticated':
      return 401;
    case 'forbidden':
      return 403;
    case 'exhausted':
      return 429;
  }
}
