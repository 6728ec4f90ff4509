/**
 * The error catalogue of the gRPC frontend (frontend/grpc/: the repository RPCs' parameters,
 * ModelInfer, restricted protocols), one function per message. Triton's wording where Triton's
 * gRPC server has the message (server `src/grpc/grpc_server.cc`, `infer_handler.cc`), Warden's
 * otherwise.
 */
import { type TritonError, invalidArg, unavailable, unsupported } from '../../contract/errors.js';

/** INVALID_ARG: a repository RPC parameter of the wrong kind (Warden's text); `what` names it (`the 'config' parameter`). */
export function parameterKind(what: string, kind: 'string_param' | 'bytes_param' | 'bool_param'): TritonError {
  return invalidArg(`${what} must be a ${kind}`);
}

/** UNSUPPORTED: ModelInfer of a decoupled model (Triton's text). */
export function inferDecoupled(): TritonError {
  return unsupported(`ModelInfer RPC doesn't support models with decoupled transaction policy`);
}

/** UNAVAILABLE: a restricted protocol without its header (Triton's text). */
export function protocolRestricted(header: string): TritonError {
  return unavailable(`This protocol is restricted, expecting header '${header}'`);
}
