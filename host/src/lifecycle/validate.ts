/**
 * Request and response validation against the model config (spec §5.4, §1.8, §1.12), with
 * Triton's error wording. Every failure is a TritonError INVALID_ARG (400) unless noted. Sequence
 * requests are checked by the sequence batcher (`scheduler/sequence-batch-scheduler.ts`); a model
 * without one accepts the sequence parameters and ignores them, as Triton's core
 * (`infer_request.cc` checks the correlation ID only for models with `sequence_batching`), so an
 * ensemble can forward its correlation ID to every step.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { countBytesElements } from '../tensor/bytes.js';
import { type DataType, dataTypeByteSize, elementCount } from '../contract/datatypes.js';
import { tensorDataType } from '../contract/datatypes.js';
import { type InferenceRequest, type InferenceRequestInit, type InferenceResponse, type Tensor } from '../contract/types.js';
import * as err from './validate.errors.js';

function matchesDims(shape: readonly number[], dims: readonly number[]): boolean {
  if (shape.length !== dims.length) return false;
  for (let i = 0; i < dims.length; i++) if (dims[i] !== -1 && dims[i] !== shape[i]) return false;
  return true;
}

/**
 * Check a tensor's bytes against its shape: exact byte size for fixed-size types, element count
 * for BYTES.
 * @returns an error message, or undefined if consistent.
 */
export function checkTensorBytes(t: Tensor): string | undefined {
  const n = elementCount(t.shape);
  if (t.datatype === 'BYTES') {
    let got: number;
    try {
      got = countBytesElements(t.data, `tensor '${t.name}'`);
    } catch (e) {
      return (e as Error).message;
    }
    return got === n ? undefined : `expected ${n} string elements for '${t.name}', got ${got}`;
  }
  const expected = n * dataTypeByteSize(t.datatype);
  return t.data.length === expected ? undefined : `Expected ${expected}, got ${t.data.length}`;
}

/** One config input, with what validation needs precomputed. */
interface InputRule {
  datatype: DataType;
  dims: readonly number[];
  /** `reshape.shape` if the config reshapes this input. */
  reshape: readonly number[] | undefined;
  optional: boolean;
  /** Position in `config.input` (for duplicate detection). */
  index: number;
}

/** Validates the requests of one model version; build it once with {@link compileRequestValidator}. */
export interface RequestValidator {
  /**
   * Validate a request against the model config and build what the backend sees (inputs reshaped
   * per `reshape`, requested outputs filled in; spec §5.4, §1.8, §1.12).
   * @throws TritonError INVALID_ARG with Triton's messages (unknown input / output, datatype,
   *   shape, batch size, byte size, missing inputs). The correlation ID and sequence flags pass
   *   through unchecked: the sequence batcher checks them, other schedulers ignore them.
   */
  validate(init: InferenceRequestInit): InferenceRequest;
}

/**
 * Precompute a model version's request checks (input map, required-input count, output names,
 * reshapes, default requested outputs) so that each request only looks things up.
 */
export function compileRequestValidator(config: ModelConfig, version: number): RequestValidator {
  const m = config.name;
  const mbs = config.max_batch_size;
  const rules = new Map<string, InputRule>(
    config.input.map((ci, index) => [ci.name, { datatype: tensorDataType(ci), dims: ci.dims, reshape: ci.reshape?.shape, optional: ci.optional, index }]),
  );
  const inputCount = config.input.length;
  const requiredCount = config.input.filter((i) => !i.optional).length;
  const outputNames = new Set(config.output.map((o) => o.name));
  const allOutputs: readonly string[] = config.output.map((o) => o.name);

  const missingInputs = (init: InferenceRequestInit, seen: Uint8Array): never => {
    const missing = config.input.filter((i, k) => !i.optional && !seen[k]).map((i) => i.name);
    throw err.inputsMissing(
      init.id,
      m,
      requiredCount,
      inputCount,
      init.inputs.map((i) => i.name),
      missing,
    );
  };

  return {
    validate(init: InferenceRequestInit): InferenceRequest {
      const seen = new Uint8Array(inputCount);
      let requiredSeen = 0;
      let batch = -1;
      const inputs: Tensor[] = [];
      for (const t of init.inputs) {
        const rule = rules.get(t.name);
        if (!rule) throw err.inputUnexpected(m, t.name);
        if (seen[rule.index]) throw err.inputRepeated(init.id, t.name);
        seen[rule.index] = 1;
        if (!rule.optional) requiredSeen++;
        if (t.datatype !== rule.datatype) {
          throw err.inputDatatypeMismatch(init.id, t.name, t.datatype, m, rule.datatype);
        }
        let dimsShape = t.shape;
        if (mbs > 0) {
          if (t.shape.length === 0) {
            throw err.inputNoBatchDim(init.id, t.name, m);
          }
          const b = t.shape[0]!;
          if (batch === -1) batch = b;
          else if (b !== batch) {
            throw err.inputBatchMismatch(init.id, t.name, m);
          }
          dimsShape = t.shape.slice(1);
        }
        if (!matchesDims(dimsShape, rule.dims)) {
          const expected = mbs > 0 ? [-1, ...rule.dims] : rule.dims;
          throw err.inputShapeMismatch(init.id, t.name, m, expected, t.shape, mbs > 0);
        }
        const bad = checkTensorBytes(t);
        if (bad) {
          throw t.datatype === 'BYTES' ? err.inputBytesInvalid(t.name, m, bad) : err.inputByteSizeMismatch(init.id, t.name, m, bad);
        }
        const shape = rule.reshape ? (mbs > 0 ? [t.shape[0]!, ...rule.reshape] : [...rule.reshape]) : t.shape;
        inputs.push(shape === t.shape ? t : { ...t, shape });
      }
      if (requiredSeen < requiredCount) missingInputs(init, seen);
      if (mbs > 0) {
        if (batch > mbs) throw err.batchTooLarge(init.id, m, mbs);
        if (batch < 1 && init.inputs.length > 0) throw err.batchTooSmall(m);
      }
      for (const o of init.requestedOutputs) {
        if (!outputNames.has(o)) throw err.outputUnexpected(m, o);
      }
      return {
        id: init.id,
        model: m,
        version,
        inputs,
        requestedOutputs: init.requestedOutputs.length > 0 ? [...new Set(init.requestedOutputs)] : allOutputs.slice(),
        parameters: init.parameters,
        correlationId: init.correlationId,
        tenant: init.tenant ?? '',
        ensemble: init.ensemble,
        blsChain: init.blsChain,
        flags: init.flags,
        priority: init.priority,
        timeoutUs: init.timeoutUs,
        traceContext: init.traceContext,
        parentTrace: init.parentTrace,
        batchSize: mbs > 0 ? Math.max(batch, 1) : 1,
        cancelled: false,
      };
    },
  };
}

/** One config output, with what response checks need precomputed. */
interface OutputRule {
  /** `reshape.shape` if reshaped, else `dims`: the shape the backend produces (after the batch dim). */
  declared: readonly number[];
  /** The config `dims` to give back to the client when the output is reshaped without -1 dims. */
  restore: readonly number[] | undefined;
}

/** Checks the responses of one model version; build it once with {@link compileResponseValidator}. */
export interface ResponseValidator {
  /**
   * Check a backend's response against the config and the request: outputs must be declared in
   * the config, with a shape matching `[batch] + dims` (or the reshape) and bytes consistent with
   * the shape and their own datatype. An output's datatype may differ from the config's: it is
   * answered as the backend gave it, as Triton does (core infer_response.cc AddOutput checks only
   * the name; Triton's bls_decoupled example relies on it). Outputs the client did not request are dropped; outputs
   * with a `reshape` are given back their config shape.
   * @throws TritonError INTERNAL naming the offending output (the backend broke its contract).
   */
  validate(request: InferenceRequest, response: InferenceResponse): InferenceResponse;
}

/** Precompute a model version's response checks (output map, datatypes, declared shapes). */
export function compileResponseValidator(config: ModelConfig): ResponseValidator {
  const m = config.name;
  const batched = config.max_batch_size > 0;
  const rules = new Map<string, OutputRule>(
    config.output.map((co) => [
      co.name,
      {
        declared: co.reshape ? co.reshape.shape : co.dims,
        restore: co.reshape && !co.dims.includes(-1) ? co.dims : undefined,
      },
    ]),
  );
  return {
    validate(request: InferenceRequest, response: InferenceResponse): InferenceResponse {
      const outputs: Tensor[] = [];
      for (const t of response.outputs) {
        const rule = rules.get(t.name);
        if (!rule) throw err.backendOutputUnexpected(m, t.name);
        const body = batched ? t.shape.slice(1) : t.shape;
        if ((batched && t.shape[0] !== request.batchSize) || !matchesDims(body, rule.declared)) {
          const exp = batched ? [request.batchSize, ...rule.declared] : rule.declared;
          throw err.backendOutputShape(m, t.name, t.shape, exp);
        }
        if (t.shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
          throw err.backendOutputInvalidShape(t.name, t.shape);
        }
        const bad = checkTensorBytes(t);
        if (bad) throw err.backendOutputBytes(t.name, bad);
        if (!request.requestedOutputs.includes(t.name)) continue;
        const shape = rule.restore ? (batched ? [t.shape[0]!, ...rule.restore] : [...rule.restore]) : t.shape;
        outputs.push(shape === t.shape ? t : { ...t, shape });
      }
      return response.parameters ? { outputs, parameters: response.parameters } : { outputs };
    },
  };
}
