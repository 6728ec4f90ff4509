/**
 * Triton errors as gRPC statuses: the mapping of Triton's gRPC frontend (`grpc_utils.cc`
 * `ToGrpcStatus`): INTERNAL→INTERNAL, NOT_FOUND→NOT_FOUND, INVALID_ARG→INVALID_ARGUMENT,
 * UNAVAILABLE→UNAVAILABLE, UNSUPPORTED→UNIMPLEMENTED, ALREADY_EXISTS→ALREADY_EXISTS,
 * CANCELLED→CANCELLED, anything else UNKNOWN; the message is the status details. Warden's
 * {@link AccessError}s map by their kind: unauthenticated→UNAUTHENTICATED,
 * forbidden→PERMISSION_DENIED, exhausted→RESOURCE_EXHAUSTED.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { AccessError, ERROR_CODES, TritonError, type AccessKind, type ErrorCode } from '../../contract/errors.js';
import { redactAbsolutePaths } from '../../contract/public-errors.js';

/** Triton's `ToGrpcStatus` table (a Map: a code from a backend is not trusted to be a key); a code not in it is UNKNOWN. */
const GRPC_STATUS = new Map<ErrorCode, status>([
  ['INTERNAL', status.INTERNAL],
  ['NOT_FOUND', status.NOT_FOUND],
  ['INVALID_ARG', status.INVALID_ARGUMENT],
  ['UNAVAILABLE', status.UNAVAILABLE],
  ['UNSUPPORTED', status.UNIMPLEMENTED],
  ['ALREADY_EXISTS', status.ALREADY_EXISTS],
  ['CANCELLED', status.CANCELLED],
]);

/** The gRPC status code of a Triton error code. */
export function grpcStatusOf(code: ErrorCode): status {
  return GRPC_STATUS.get(code) ?? status.UNKNOWN;
}

const ACCESS_STATUS: Record<AccessKind, status> = {
  unauthenticated: status.UNAUTHENTICATED,
  forbidden: status.PERMISSION_DENIED,
  exhausted: status.RESOURCE_EXHAUSTED,
};

/** The gRPC status code of an access refusal. */
export function grpcAccessStatusOf(kind: AccessKind): status {
  return ACCESS_STATUS[kind];
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

/**
 * The status and message a client gets for a backend error the native data path met on a gRPC
 * call (`code`: `TRITONSERVER_Error_Code`): the same as {@link toServiceError} of the error the
 * TypeScript path would have thrown, made public by `publicError`.
 */
export function nativeErrorStatus(code: number, message: string, publicError: (e: unknown) => TritonError): { code: number; message: string } {
  const e = toServiceError(publicError(new TritonError(ERROR_CODES[code] ?? 'UNKNOWN', message)));
  return { code: e.code ?? status.UNKNOWN, message: e.details ?? '' };
}
