/**
 * Request and response validation against the model config (spec §5.4, §1.8, §1.12), with
 * Triton's error wording. Every failure is a TritonError INVALID_ARG (400) unless noted.
 */
import type { ModelConfig, ModelInput, ModelOutput } from '../config/types.js';
import { countBytesElements } from '../tensor/bytes.js';
import { type DataType, dataTypeByteSize, elementCount, fromConfigDataType } from '../tensor/datatypes.js';
import { internal, invalidArg } from './errors.js';
import type { InferenceRequest, InferenceResponse, Tensor } from './types.js';

/**
 * A request as the frontend builds it, before validation: the fields of InferenceRequest the
 * client controls. `version` may be -1 (let the server pick the highest ready version) and an
 * empty `requestedOutputs` means every output in the config (spec §1.12).
 */
export type InferenceRequestInit = Omit<InferenceRequest, 'batchSize' | 'cancelled'>;

const shapeText = (s: readonly number[]): string => `[${s.join(',')}]`;

function matchesDims(shape: readonly number[], dims: readonly number[]): boolean {
  if (shape.length !== dims.length) return false;
  for (let i = 0; i < dims.length; i++) if (dims[i] !== -1 && dims[i] !== shape[i]) return false;
  return true;
}

/** Config data type → protocol datatype (TYPE_STRING → BYTES). */
export function tensorDataType(t: ModelInput | ModelOutput): DataType {
  return fromConfigDataType(t.data_type) ?? 'BYTES';
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

/**
 * Validate a request against the model config and build what the backend sees (inputs reshaped
 * per `reshape`, requested outputs filled in).
 * @throws TritonError INVALID_ARG with Triton's messages (unknown input / output, datatype,
 *   shape, batch size, byte size, missing inputs).
 */
export function validateRequest(config: ModelConfig, version: number, init: InferenceRequestInit): InferenceRequest {
  const m = config.name;
  const byName = new Map(config.input.map((i) => [i.name, i]));
  const seen = new Set<string>();
  const mbs = config.max_batch_size;
  let batch = -1;
  const inputs: Tensor[] = [];
  for (const t of init.inputs) {
    const ci = byName.get(t.name);
    if (!ci) throw invalidArg(`unexpected inference input '${t.name}' for model '${m}'`);
    if (seen.has(t.name)) throw invalidArg(`input '${t.name}' already exists in request`);
    seen.add(t.name);
    const expectedType = tensorDataType(ci);
    if (t.datatype !== expectedType) {
      throw invalidArg(`inference input '${t.name}' data-type is '${t.datatype}', but model '${m}' expects '${expectedType}'`);
    }
    let dimsShape = t.shape;
    if (mbs > 0) {
      if (t.shape.length === 0) {
        throw invalidArg(`inference input '${t.name}' for model '${m}' must have a batch dimension`);
      }
      const b = t.shape[0]!;
      if (batch === -1) batch = b;
      else if (b !== batch) {
        throw invalidArg(`input '${t.name}' batch size does not match other inputs for '${m}'`);
      }
      dimsShape = t.shape.slice(1);
    }
    if (!matchesDims(dimsShape, ci.dims)) {
      const expected = mbs > 0 ? [-1, ...ci.dims] : ci.dims;
      throw invalidArg(
        `unexpected shape for input '${t.name}' for model '${m}'. Expected ${shapeText(expected)}, got ${shapeText(t.shape)}. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.`,
      );
    }
    const bad = checkTensorBytes(t);
    if (bad) {
      throw invalidArg(
        t.datatype === 'BYTES'
          ? `input '${t.name}' for model '${m}': ${bad}`
          : `input byte size mismatch for input '${t.name}' for model '${m}'. ${bad}`,
      );
    }
    const shape = ci.reshape ? (mbs > 0 ? [t.shape[0]!, ...ci.reshape.shape] : [...ci.reshape.shape]) : t.shape;
    inputs.push(shape === t.shape ? t : { ...t, shape });
  }
  const missing = config.input.filter((i) => !i.optional && !seen.has(i.name)).map((i) => i.name);
  if (missing.length > 0) {
    const required = config.input.filter((i) => !i.optional).length;
    throw invalidArg(
      `expected ${required} inputs but got ${init.inputs.length} inputs for model '${m}'. Got input(s) [${init.inputs
        .map((i) => `'${i.name}'`)
        .join(', ')}], but missing required input(s) [${missing.map((n) => `'${n}'`).join(', ')}]. Please provide all required input(s).`,
    );
  }
  if (mbs > 0) {
    if (batch > mbs) throw invalidArg(`inference request batch-size must be <= ${mbs} for '${m}'`);
    if (batch < 1 && init.inputs.length > 0) throw invalidArg(`inference request batch-size must be >= 1 for '${m}'`);
  }
  const outputNames = new Set(config.output.map((o) => o.name));
  for (const o of init.requestedOutputs) {
    if (!outputNames.has(o)) throw invalidArg(`unexpected inference output '${o}' for model '${m}'`);
  }
  return {
    id: init.id,
    model: m,
    version,
    inputs,
    requestedOutputs: init.requestedOutputs.length > 0 ? [...new Set(init.requestedOutputs)] : config.output.map((o) => o.name),
    parameters: init.parameters,
    correlationId: init.correlationId,
    flags: init.flags,
    priority: init.priority,
    timeoutUs: init.timeoutUs,
    batchSize: mbs > 0 ? Math.max(batch, 1) : 1,
    cancelled: false,
  };
}

/**
 * Check a backend's response against the config and the request: outputs must be declared in the
 * config, with the config's datatype, a shape matching `[batch] + dims` (or the reshape), and bytes
 * consistent with the shape. Outputs the client did not request are dropped; outputs with a
 * `reshape` are given back their config shape.
 * @throws TritonError INTERNAL naming the offending output (the backend broke its contract).
 */
export function validateResponse(config: ModelConfig, request: InferenceRequest, response: InferenceResponse): InferenceResponse {
  const outputs: Tensor[] = [];
  const m = config.name;
  for (const t of response.outputs) {
    const co = config.output.find((o) => o.name === t.name);
    if (!co) throw internal(`backend produced unexpected output '${t.name}' for model '${m}'`);
    const dt = tensorDataType(co);
    if (t.datatype !== dt) {
      throw internal(`backend produced output '${t.name}' of data-type '${t.datatype}', but model '${m}' declares '${dt}'`);
    }
    const batched = config.max_batch_size > 0;
    const declared = co.reshape ? co.reshape.shape : co.dims;
    const body = batched ? t.shape.slice(1) : t.shape;
    if ((batched && t.shape[0] !== request.batchSize) || !matchesDims(body, declared)) {
      const exp = batched ? [request.batchSize, ...declared] : declared;
      throw internal(`backend produced output '${t.name}' of shape ${shapeText(t.shape)} for model '${m}', expected ${shapeText(exp)}`);
    }
    if (t.shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
      throw internal(`backend produced output '${t.name}' with invalid shape ${shapeText(t.shape)}`);
    }
    const bad = checkTensorBytes(t);
    if (bad) throw internal(`backend produced output '${t.name}' whose data does not match its shape: ${bad}`);
    if (!request.requestedOutputs.includes(t.name)) continue;
    let shape = t.shape;
    if (co.reshape && !co.dims.includes(-1)) shape = batched ? [t.shape[0]!, ...co.dims] : [...co.dims];
    outputs.push(shape === t.shape ? t : { ...t, shape });
  }
  return response.parameters ? { outputs, parameters: response.parameters } : { outputs };
}
