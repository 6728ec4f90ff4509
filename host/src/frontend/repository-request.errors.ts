/**
 * The error catalogue of the model repository extension's requests (spec §3.1) shared by both
 * frontends (frontend/http/app.ts, frontend/http/load-request.ts, frontend/grpc/service.ts), one
 * function per message. Triton's text (server `src/http_server.cc`, `src/grpc/grpc_server.cc`).
 */
import { type TritonError, internal, unsupported } from '../contract/errors.js';

/** UNSUPPORTED: a repository request naming a repository. */
export function repositoryNameUnsupported(): TritonError {
  return unsupported("'repository_name' specification is not supported");
}

/** INTERNAL: a load parameter other than `config` and `file:<path>` (Triton answers it so). */
export function loadParameterUnknown(key: string): TritonError {
  return internal(`unexpected error on creating Triton parameter: unrecognized load parameter '${key}'`);
}
