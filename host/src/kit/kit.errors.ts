/**
 * The error catalogue of the tenant backend kit (`warden backend ...`, host/src/kit/;
 * docs/tenant-guide.md), one function per message. These are the kit's own texts, printed on the
 * tenant's machine; what the server would refuse is reported with the server's own catalogue
 * (backends/wasm/sandbox.errors.ts, config/config.errors.ts), never a copy.
 */
import { type TritonError, internal, invalidArg, notFound, unavailable } from '../contract/errors.js';

/** `not-found`: the folder holds no `warden-backend.json` (not a project `warden backend new` made). */
export function projectMissing(dir: string): TritonError {
  return notFound(`${dir} is not a backend project (no warden-backend.json; make one with 'warden backend new <name> --lang ts|c|py|rust')`);
}

/** `invalid-arg`: `warden-backend.json` is not what `warden backend new` writes. */
export function projectInvalid(file: string, detail: string): TritonError {
  return invalidArg(`${file}: ${detail}`);
}

/** `invalid-arg`: `warden backend new` would write into a folder that exists and is not empty. */
export function projectExists(dir: string): TritonError {
  return invalidArg(`${dir} already exists and is not empty; pick another --dir or name`);
}

/** `invalid-arg`: a project or model name that is not a Triton model name Warden accepts for uploads. */
export function nameInvalid(name: string): TritonError {
  return invalidArg(`'${name}' is not a usable model name: use letters, digits, '_', '-' and '.', starting with a letter or digit (at most 64 characters)`);
}

/** `invalid-arg`: the project's pinned WIT package is of a version this server does not implement. */
export function witVersionUnsupported(have: string, supported: readonly string[]): TritonError {
  return invalidArg(`the project's wit/ declares warden:backend version ${have}; this Warden builds and serves version ${supported.join(', ')}`);
}

/** `unavailable`: a build tool (componentize-js, clang) is not installed beside Warden. */
export function toolMissing(tool: string, how: string): TritonError {
  return unavailable(`${tool} is not installed: ${how}`);
}

/** `invalid-arg`: the build of the guest failed (the compiler's output follows). */
export function buildFailed(step: string, output: string): TritonError {
  return invalidArg(`${step} failed:\n${output.trimEnd()}`);
}

/** `not-found`: `warden backend test` / `check` / `upload` found no component: build first. */
export function componentNotBuilt(file: string): TritonError {
  return notFound(`${file} does not exist: run 'warden backend build' first`);
}

/** `invalid-arg`: the `--input` file is not a KServe v2 JSON request body. */
export function inputInvalid(file: string, detail: string): TritonError {
  return invalidArg(`${file}: ${detail} (expected a KServe v2 JSON request body: {"inputs": [{"name", "shape", "datatype", "data"}]})`);
}

/** `invalid-arg`: an input the test request names that the model configuration does not declare. */
export function inputUnknown(model: string, input: string, declared: readonly string[]): TritonError {
  return invalidArg(`unexpected inference input '${input}' for model '${model}' (the configuration declares ${declared.join(', ') || 'none'})`);
}

/** `internal`: the server answered the upload with something that is not Triton's JSON error or success. */
export function uploadAnswerMalformed(status: number, body: string): TritonError {
  return internal(`the server answered HTTP ${status} with an unexpected body: ${body.slice(0, 200)}`);
}

/** `unavailable`: the server could not be reached for the upload. */
export function serverUnreachable(url: string, detail: string): TritonError {
  return unavailable(`cannot reach ${url}: ${detail}`);
}
