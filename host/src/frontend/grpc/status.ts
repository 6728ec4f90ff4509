/**
 * Triton errors as gRPC statuses: the mapping of Triton's gRPC frontend (`grpc_utils.cc`
 * `ToGrpcStatus`): INTERNAL→INTERNAL, NOT_FOUND→NOT_FOUND, INVALID_ARG→INVALID_ARGUMENT,
 * UNAVAILABLE→UNAVAILABLE, UNSUPPORTED→UNIMPLEMENTED, ALREADY_EXISTS→ALREADY_EXISTS,
 * CANCELLED→CANCELLED, anything else UNKNOWN; the message is the status details. Warden's
 * {@link AccessError}s map by their kind: unauthenticated→UNAUTHENTICATED,
 * forbidden→PERMISSION_DENIED, exhausted→RESOURCE_EXHAUSTED.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { AccessError, type AccessKind, type ErrorCode, type TritonError } from '../../contract/errors.js';
import { redactAbsolutePaths } from '../../contract/public-errors.js';

/** The gRPC status code of a Triton error code. */
export function grpcStatusOf(code: ErrorCode): status {
  switch (code) {
    case 'INTERNAL':
      return status.INTERNAL;
    case 'NOT_FOUND':
      return status.NOT_FOUND;
    case 'INVALID_ARG':
      return status.INVALID_ARGUMENT;
    case 'UNAVAILABLE':
      return status.UNAVAILABLE;
    case 'UNSUPPORTED':
      return status.UNIMPLEMENTED;
    case 'ALREADY_EXISTS':
      return status.ALREADY_EXISTS;
    case 'CANCELLED':
      return status.CANCELLED;
    default:
      return status.UNKNOWN;
  }
}

/** The gRPC status code of an access refusal. */
export function grpcAccessStatusOf(kind: AccessKind): status {
  switch (kind) {
    case 'unauthenticated':
      return status.UNAUTHENTICATED;
    case 'forbidden':
      return status.PERMISSION_DENIED;
    case 'exhausted':
      return status.RESOURCE_EXHAUSTED;
  }
}

/**
 * The status a client gets for `e` (made public by `ServerApi.publicError`); its absolute paths
 * are redacted here as well, the last step before it leaves (contract/public-errors.ts).
 */
export function toServiceError(e: TritonError): Partial<ServiceError> {
  let code: status;
  if (e instanceof AccessError) code = grpcAccessStatusOf(e.kind);
  else code = grpcStatusOf(e.code);
  const message = redactAbsolutePaths(e.message);
  return { code, details: message, message };
}
