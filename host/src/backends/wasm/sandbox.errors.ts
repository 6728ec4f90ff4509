/**
 * The error catalogue of sandboxed (WebAssembly component) backends: loading a component (checks,
 * compilation on V8 and wasmtime, memory limits and budgets) and running its instances (start-up,
 * traps, deadlines, restarts), one function per message. All Warden's text (DESIGN "Sandbox
 * rules"; Triton has no sandbox). `what` names the component as `model 'm' version v: file`;
 * `detail` is an engine's or parser's own message.
 */
import { type ErrorCode, TritonError, internal, invalidArg, notFound, unavailable } from '../../contract/errors.js';

/** INVALID_ARG: the memory parameter below the sandbox's minimum, bytes. */
export function memoryParamTooSmall(model: string, param: string, minBytes: number): TritonError {
  return invalidArg(`model '${model}': ${param} must be at least ${minBytes} bytes`);
}

/** INVALID_ARG: the engine parameter names no engine. */
export function engineUnknown(model: string, param: string, engines: readonly string[], got: string): TritonError {
  return invalidArg(`model '${model}': parameter ${param} must be one of ${engines.join(', ')}, got '${got.slice(0, 64)}'`);
}

/** INVALID_ARG: the model asks for an engine this server does not run. */
export function engineNotServed(model: string, engine: string): TritonError {
  return invalidArg(`model '${model}': this server runs sandboxed models on engine ${engine} only`);
}

/** INTERNAL: a component compiled by one engine handed to another. */
export function engineMismatch(engine: string, compiledBy: string): TritonError {
  return internal(`engine ${engine} cannot run a component compiled by engine ${compiledBy}`);
}

/** INTERNAL: the wasmtime engine used after disposal. */
export function engineDisposed(): TritonError {
  return internal('the wasmtime engine was disposed');
}

/** INVALID_ARG: an output of a data type the sandbox cannot carry. */
export function outputDatatypeUnsupported(model: string, output: string, dataType: string): TritonError {
  return invalidArg(`model '${model}': output '${output}' has unsupported data_type ${dataType}`);
}

/** INVALID_ARG: the component file grew past the cap while loading, bytes. */
export function componentGrew(model: string, file: string, maxBytes: number | bigint): TritonError {
  return invalidArg(`model '${model}': ${file} grew past ${maxBytes} bytes while it was being loaded`);
}

/** UNAVAILABLE: the component file changed while loading. */
export function componentChanged(what: string): TritonError {
  return unavailable(`${what} changed while it was being loaded; load the model again`);
}

/** INVALID_ARG: `default_model_filename` is not one file name (an absolute path is not shown). */
export function componentFileName(model: string, file: string): TritonError {
  return invalidArg(`model '${model}': default_model_filename ${file.startsWith('/') ? 'is an absolute path; it' : `'${file}'`} must be a file name`);
}

/** `code` (INVALID_ARG unless given): the component is malformed or refused; `detail` the checker's reason. */
export function componentMalformed(what: string, detail: string, code: ErrorCode = 'INVALID_ARG'): TritonError {
  return new TritonError(code, `${what}: ${detail}`);
}

/** INVALID_ARG: the component's refusal by the checker, as the checker words it. */
export function componentRefused(refusal: string): TritonError {
  return invalidArg(refusal);
}

/** INVALID_ARG: the component lacks the backend export. */
export function componentNoBackend(what: string, exportName: string): TritonError {
  return invalidArg(`${what} does not export '${exportName}' (the backend interface of the sandboxed-backend world)`);
}

/** INVALID_ARG: the component exports the backend interface of a `warden:backend` version this host does not serve. */
export function componentBackendVersion(what: string, exportName: string, supported: string): TritonError {
  return invalidArg(`${what} exports '${exportName}', built against a warden:backend version this host does not serve (it serves ${supported})`);
}

/** INVALID_ARG: the component exports more than the backend. */
export function componentExtraExport(what: string, extra: string, exportName: string): TritonError {
  return invalidArg(`${what} exports '${extra}'; a sandboxed backend exports only '${exportName}'`);
}

/** INVALID_ARG: a core module where a core WebAssembly module was expected (V8). */
export function notCoreModule(what: string): TritonError {
  return invalidArg(`${what} is not a core WebAssembly module`);
}

/** UNSUPPORTED: a memory feature the sandbox refuses (`memory64 memories`, `shared memories`, `custom page sizes`). */
export function memoryFeatureUnsupported(what: string, feature: string): TritonError {
  return new TritonError('UNSUPPORTED', `${what}: ${feature} are not supported in the sandbox`);
}

/** INVALID_ARG: a module's initial memory over the model's limit, bytes. */
export function memoryAtStartTooLarge(what: string, needBytes: number, limitBytes: number): TritonError {
  return invalidArg(
    `${what} needs ${needBytes} bytes of linear memory at start, more than the model's memory limit of ${limitBytes} bytes (parameter memory_limit_bytes)`,
  );
}

/** INVALID_ARG: a core module V8 cannot compile. */
export function coreModuleCompile(what: string, module: string, detail: string): TritonError {
  return invalidArg(`${what}: core module ${module} does not compile: ${detail}`);
}

/** INVALID_ARG: jco cannot transpile the component. */
export function transpileFailed(what: string, detail: string): TritonError {
  return invalidArg(`${what}: jco cannot transpile this component: ${detail}`);
}

/** INTERNAL: jco's output or the transpile cache is not as expected; `detail` says how. */
export function transpileBroken(what: string, detail: string): TritonError {
  return internal(`${what}: ${detail}`);
}

/** `code`: wasmtime cannot compile the component. */
export function wasmtimeCompile(what: string, code: ErrorCode, detail: string): TritonError {
  return new TritonError(code, `${what}: wasmtime cannot compile the component: ${detail}`);
}

/** UNAVAILABLE: an instance's memory does not fit the free sandbox memory, bytes. */
export function instanceMemoryFull(
  model: string,
  instance: string,
  needBytes: number,
  memory: string,
  budget: string,
  freeBytes: number,
  limitBytes: number,
): TritonError {
  return unavailable(
    `model '${model}' instance ${instance} needs ${needBytes} bytes of sandbox memory (${memory}), but ${budget} has only ${freeBytes} of ${limitBytes} bytes free`,
  );
}

/** INVALID_ARG: one sandbox of the model could never fit in its memory budget (its limit is smaller). */
export function modelMemoryTooLarge(model: string, needBytes: number, memory: string, budget: string, limitBytes: number, param: string): TritonError {
  return invalidArg(
    `model '${model}' needs ${needBytes} bytes of sandbox memory for one instance (${memory}), more than ${budget} allows: ${limitBytes} bytes; lower ${param}`,
  );
}

/** INTERNAL: a model's memory budget outside the server's. */
export function budgetOutside(model: string, budget: string): TritonError {
  return internal(`model '${model}': its memory budget '${budget}' is not inside the server's sandbox memory budget`);
}

/** INTERNAL: the sandbox's worker failed during start-up (V8). */
export function startupError(model: string, detail: string): TritonError {
  return internal(`sandbox of model '${model}' failed during start-up: ${detail}`);
}

/** INTERNAL: the sandbox's worker exited during start-up with `code` (V8). */
export function startupExit(model: string, code: number): TritonError {
  return internal(`sandbox of model '${model}' exited during start-up (code ${code})`);
}

/** INTERNAL: the sandbox's thread could not start (wasmtime). */
export function startFailed(model: string, detail: string): TritonError {
  return internal(`sandbox of model '${model}' could not start: ${detail}`);
}

/** INTERNAL: the guest trapped during start-up. */
export function trappedAtStart(model: string, detail: string): TritonError {
  return internal(`sandboxed backend of model '${model}' trapped during start-up: ${detail}`);
}

/** INTERNAL: the guest trapped while executing; the instance was restarted. */
export function trapped(model: string, detail: string): TritonError {
  return internal(`sandboxed backend of model '${model}' trapped: ${detail}; the instance was restarted`);
}

/** UNAVAILABLE: the guest ran past its execute deadline, ms; the instance was restarted. */
export function deadlineExceeded(model: string, executeMs: number): TritonError {
  return unavailable(`sandboxed backend of model '${model}' exceeded its execute deadline of ${executeMs} ms; the instance was restarted`);
}

/** INTERNAL: the sandbox failed (`why`); the instance was restarted. */
export function sandboxFailed(model: string, why: string): TritonError {
  return internal(`sandbox of model '${model}' failed (${why}); the instance was restarted`);
}

/** INTERNAL: the sandbox's result could not be decoded. */
export function resultMalformed(model: string, detail: string): TritonError {
  return internal(`sandbox of model '${model}' returned a malformed result: ${detail}`);
}

/** UNAVAILABLE: the sandbox cannot be (re)started. */
export function sandboxUnavailable(model: string, detail: string): TritonError {
  return unavailable(`sandboxed backend of model '${model}' is unavailable: ${detail}`);
}

/** UNAVAILABLE: an instance used after finalize. */
export function instanceFinalized(model: string, instance: string): TritonError {
  return unavailable(`instance ${instance} of model '${model}' is finalized`);
}

/** UNAVAILABLE: the sandbox did not start within `limitMs` ms (V8). */
export function startTimeout(model: string, limitMs: number): TritonError {
  return unavailable(`sandbox of model '${model}' did not start within ${limitMs} ms`);
}

/** UNAVAILABLE: the sandbox's thread is gone (wasmtime). */
export function sandboxGone(model: string): TritonError {
  return unavailable(`sandbox of model '${model}' is gone`);
}

/** UNAVAILABLE: the instance was finalized while starting. */
export function finalizedDuringStart(model: string, instance: string): TritonError {
  return unavailable(`instance ${instance} of model '${model}' was finalized during start-up`);
}

/** UNAVAILABLE: the instance was finalized with a request in flight. */
export function finalizedInFlight(model: string, instance: string): TritonError {
  return unavailable(`instance ${instance} of model '${model}' was finalized`);
}

/** NOT_FOUND: no component at `<version>/<file>`; `rel` as the model directory names it. */
export function componentMissing(model: string, version: number, rel: string, file: string): TritonError {
  return notFound(`unable to find '${rel}' for model '${model}' version ${version} (backend wasm expects a component at <version>/${file})`);
}

/** NOT_FOUND: the component path is not a regular file. */
export function componentNotFile(model: string, version: number, file: string): TritonError {
  return notFound(`model '${model}' version ${version}: ${file} is not a file`);
}

/** INVALID_ARG: the component file over the cap, bytes (`size` undefined when unknown). */
export function componentTooLarge(model: string, file: string, size: number | undefined, maxBytes: number | bigint): TritonError {
  return invalidArg(`model '${model}': ${file} is ${size ?? 'more than'} bytes, more than ${maxBytes}`);
}
