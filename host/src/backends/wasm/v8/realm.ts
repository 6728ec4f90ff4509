/**
 * What a V8 sandbox worker's own JavaScript realm still offers the guest, closed before the glue
 * loads (./worker.ts). The guest reaches JavaScript only through jco's glue, which looks imported
 * members up by the names the load check allowed, in an import object without prototypes
 * (./imports.ts); this is the last line behind both.
 */

/**
 * Replaces `Function.prototype.constructor` (and the async / generator / async generator
 * variants) with a function that throws, so that no lookup ending in `.constructor` on a
 * function can compile source in this worker. Called once, before the glue is loaded; neither the
 * glue nor the host capabilities construct functions from strings.
 */
export function closeCodeGeneration(): void {
  const refuse = function constructorDisabled(): never {
    throw new EvalError('code generation from strings is disabled in the sandbox');
  };
  Object.setPrototypeOf(refuse, null);
  Object.freeze(refuse);
  const protos = [Function.prototype, ...[async function () {}, function* () {}, async function* () {}].map((f) => Object.getPrototypeOf(f) as object)];
  for (const proto of protos) Object.defineProperty(proto, 'constructor', { value: refuse, writable: false, configurable: false, enumerable: false });
}
