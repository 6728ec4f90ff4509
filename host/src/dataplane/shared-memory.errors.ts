/**
 * The error catalogue of client shared memory (spec §3.3): every error text the shared-memory
 * extension answers, over HTTP and gRPC, one function per message. Triton's wording where Triton
 * has the message (server `src/shared_memory_manager.cc`, `src/http_server.cc`, `src/grpc/grpc_server.cc`,
 * `src/common.cc`), Warden's otherwise. Messages carry keys and region names as the client sent
 * them; the data plane's public-error path (contract/public-errors.ts) removes any absolute path.
 */
import { TritonError, forbidden, internal, invalidArg, notFound } from '../contract/errors.js';

/** UNSUPPORTED while client shared memory is off (`--allow-client-shm=false`, Triton's default): Triton's text. */
export function clientShmDisabled(): TritonError {
  return new TritonError('UNSUPPORTED', "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.");
}

/** INVALID_ARG: `key` is not one POSIX shm name (Warden's: the key is a host file name). `shown` is the key JSON-escaped. */
export function shmKeyNotPosixName(shown: string): TritonError {
  return invalidArg(`invalid shared memory key '${shown}': expected a POSIX shared memory name ('/name', no other '/')`);
}

/** INVALID_ARG: `key` lies under Warden's own prefix (`/<reserved>...`, Warden's text). */
export function shmKeyReservedByServer(key: string, reservedPrefix: string): TritonError {
  return invalidArg(`shared memory key '${key}' is reserved for the server's own use ('/${reservedPrefix}...')`);
}

/** INVALID_ARG: `key` lies under Triton's Python backend prefix (Triton's text, `common.cc` ValidateSharedMemoryKey). */
export function shmKeyReservedByTriton(region: string, key: string, reservedPrefix: string): TritonError {
  return invalidArg(`cannot register shared memory region '${region}' with key '${key}' as the key contains the reserved prefix '${reservedPrefix}'`);
}

/** INVALID_ARG: `offset` / `byte_size` is not a non-negative integer (Warden's text). */
export function shmCountInvalid(what: string): TritonError {
  return invalidArg(`'${what}' must be a non-negative integer`);
}

/** INVALID_ARG: register without a region name (Triton's text, `http_server.cc`); `kind` 'system' or 'cuda'. */
export function shmRegionNameMissing(kind: 'system' | 'cuda'): TritonError {
  return invalidArg(`'region name' is necessary to register ${kind} shared memory region`);
}

/** ALREADY_EXISTS: a region of that name is registered (Triton's text, `shared_memory_manager.cc`). */
export function shmRegionExists(name: string): TritonError {
  return new TritonError('ALREADY_EXISTS', `shared memory region '${name}' already in manager`);
}

/** AccessError forbidden: a tenant's key outside its `/<tenant>.` prefix (Warden's text, DESIGN "Multi-tenancy"). */
export function shmKeyOutsideTenant(namespace: string, prefix: string): TritonError {
  return forbidden(`tenant '${namespace}' may register only shared memory keys starting with '/${prefix}'`);
}

/** INVALID_ARG: the key's object is registered by another namespace (Warden's text). */
export function shmKeyTaken(key: string): TritonError {
  return invalidArg(`shared memory key '${key}' is registered by another client`);
}

/** AccessError forbidden: the namespace holds its cap of regions (Warden's text). */
export function shmRegionCap(max: number): TritonError {
  return forbidden(`at most ${max} shared memory regions may be registered at once`);
}

/** INTERNAL: no shm object of that key exists (Triton's text and code, `shared_memory_manager.cc` OpenSharedMemoryRegion). */
export function shmOpenMissing(key: string): TritonError {
  return internal(`Unable to open shared memory region: '${key}'`);
}

/** INVALID_ARG: the key's object cannot be used; `why` says how (a symbolic link, not a shm object, an errno). Triton's text with Warden's reason. */
export function shmOpenRefused(key: string, why: string): TritonError {
  return invalidArg(`Unable to open shared memory region: '${key}' (${why})`);
}

/** INVALID_ARG: `offset + byteSize` passes the end of the key's object, bytes (Warden's text). */
export function shmRegionPastObject(name: string, offset: number, byteSize: number, objectBytes: number, key: string): TritonError {
  return invalidArg(`failed to register shared memory region '${name}': offset ${offset} + byte_size ${byteSize} exceeds the ${objectBytes} bytes of '${key}'`);
}

/** NOT_FOUND: a CUDA region name that is registered as system shared memory (Warden's text). */
export function shmRegionIsSystem(name: string): TritonError {
  return notFound(`The region named '${name}' is registered as system shared memory, not CUDA shared memory`);
}

/** NOT_FOUND: no region of that name, of `kind` (Triton's text, `shared_memory_manager.cc`); '' for any kind. */
export function shmRegionNotFound(name: string, kind: 'system' | 'cuda' | ''): TritonError {
  return notFound(`Unable to find ${kind === '' ? '' : `${kind} `}shared memory region: '${name}'`);
}

/** INVALID_ARG: a tensor's offset + size passes the region's end (Triton's text, `shared_memory_manager.cc` GetMemoryInfo). */
export function shmRangeInvalid(name: string): TritonError {
  return invalidArg(`Invalid offset + byte size for shared memory region: '${name}'`);
}

/** INVALID_ARG: one input read from a region over the request-size cap, bytes (Warden's text). */
export function shmReadTooLarge(name: string, size: number, maxBytes: number): TritonError {
  return invalidArg(`input of ${size} bytes from shared memory region '${name}' exceeds the ${maxBytes}-byte request limit`);
}

/** INVALID_ARG: the region's object was truncated after registration (Warden's text). */
export function shmRegionTruncated(name: string): TritonError {
  return invalidArg(`shared memory region '${name}' is shorter than registered`);
}

/** INVALID_ARG: an output's region is smaller than the output, bytes (Triton's text, `http_server.cc` InferResponseAlloc). */
export function shmOutputTooSmall(output: string, byteSize: number, needed: number): TritonError {
  return invalidArg(
    `shared memory size specified with the request for output '${output}' (${byteSize} bytes) should be at least ${needed} bytes to hold the results`,
  );
}

/** INVALID_ARG: the HTTP register body is not an object (Warden's text). */
export function shmRegisterBodyNotObject(): TritonError {
  return invalidArg('register request must be a JSON object with key, offset and byte_size');
}

/**
 * INVALID_ARG: the HTTP register body's `key` is not a string: Triton's JSON-access wording
 * (`triton_json.h`, see contract/errors.ts jsonAccessError) with the code Warden answers, INVALID_ARG.
 */
export function shmRegisterKeyNotString(): TritonError {
  return invalidArg("Unable to parse 'key': attempt to access JSON non-string as string");
}

/** INVALID_ARG: CUDA register on a server without GPUs (Triton's text, `http_server.cc` / `grpc_server.cc` without TRITON_ENABLE_GPU). */
export function cudaShmUnsupported(name: string): TritonError {
  return invalidArg(`failed to register CUDA shared memory region: '${name}', GPUs not supported`);
}
