/**
 * The per-model-version validators built once at load (spec §5.4, §1.12): one compiled validator
 * serves every request without carrying state from one to the next, with Triton's wording.
 */
import { describe, expect, it } from 'vitest';
import { compileRequestValidator, compileResponseValidator } from '../../host/src/lifecycle/validate.js';
import { config, echoInit } from '../helpers/model-version.js';

const CFG = config(`
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 2, 2 ] reshape { shape: [ 4 ] } optional: true } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 2, 2 ] reshape { shape: [ 4 ] } } ]
`);
const i32 = (name: string, shape: number[]) => ({ name, datatype: 'INT32' as const, shape, data: new Uint8Array(4 * shape.reduce((a, b) => a * b, 1)) });

describe('compiled request validator', () => {
  const v = compileRequestValidator(CFG, 7);

  it('validates request after request with no state carried over', () => {
    const dup = echoInit('d', { inputs: [i32('INPUT0', [1, 4]), i32('INPUT0', [1, 4])] });
    expect(() => v.validate(dup)).toThrow("input 'INPUT0' already exists in request");
    const a = v.validate(echoInit('a', { inputs: [i32('INPUT0', [2, 4]), i32('INPUT1', [2, 2, 2])] }));
    const b = v.validate(echoInit('b'));
    expect(a.version).toBe(7);
    expect(a.batchSize).toBe(2);
    expect(a.inputs[1]!.shape).toEqual([2, 4]);
    expect(a.requestedOutputs).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(b.requestedOutputs).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(a.requestedOutputs).not.toBe(b.requestedOutputs);
    expect(b.cancelled).toBe(false);
  });

  it("keeps Triton's messages", () => {
    // Core checks carry the request's id as Triton's LogRequest() writes it (core infer_request.h).
    expect(() => v.validate(echoInit('x', { inputs: [i32('INPUT1', [1, 2, 2])] }))).toThrow(
      "[request id: x] expected number of inputs between 1 and 2 but got 1 inputs for model 'model'. Got input(s) ['INPUT1'], but missing required input(s) ['INPUT0']. Please provide all required input(s).",
    );
    expect(() => v.validate(echoInit('', { inputs: [i32('INPUT0', [1, 5])] }))).toThrow(
      /^\[request id: <id_unknown>\] unexpected shape for input 'INPUT0' for model 'model'\. Expected \[-1,4\], got \[1,5\]\. NOTE: Setting a non-zero max_batch_size/,
    );
    expect(() => v.validate(echoInit('x', { inputs: [i32('NOPE', [1, 4])] }))).toThrow("unexpected inference input 'NOPE' for model 'model'");
    expect(() => v.validate(echoInit('x', { requestedOutputs: ['NOPE'] }))).toThrow("unexpected inference output 'NOPE' for model 'model'");
    expect(() => v.validate(echoInit('x', { inputs: [i32('INPUT0', [9, 4])] }))).toThrow(
      "[request id: x] inference request batch-size must be <= 8 for 'model'",
    );
  });

  it("names missing inputs as Triton's core does: quoted, joined by ',' with no space (infer_request.cc)", () => {
    const all = compileRequestValidator(
      config(`
input [ { name: "A" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "C" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`),
      1,
    );
    expect(() => all.validate(echoInit('', { inputs: [i32('B', [1])] }))).toThrow(
      "[request id: <id_unknown>] expected 3 inputs but got 1 inputs for model 'model'. Got input(s) ['B'], but missing required input(s) ['A','C']. Please provide all required input(s).",
    );
  });
});

describe('compiled response validator', () => {
  const v = compileResponseValidator(CFG);
  const request = compileRequestValidator(CFG, 1).validate(echoInit('r', { inputs: [i32('INPUT0', [2, 4])], requestedOutputs: ['OUTPUT1'] }));

  it('drops outputs not requested and gives reshaped outputs their config shape', () => {
    const out = v.validate(request, { outputs: [i32('OUTPUT0', [2, 4]), i32('OUTPUT1', [2, 4])] });
    expect(out.outputs.map((t) => [t.name, t.shape])).toEqual([['OUTPUT1', [2, 2, 2]]]);
  });

  it('names the output that breaks the contract', () => {
    expect(() => v.validate(request, { outputs: [i32('OUTPUT9', [2, 4])] })).toThrow("backend produced unexpected output 'OUTPUT9' for model 'model'");
    expect(() => v.validate(request, { outputs: [i32('OUTPUT0', [3, 4])] })).toThrow(
      "backend produced output 'OUTPUT0' of shape [3,4] for model 'model', expected [2,4]",
    );
  });

  // Triton core infer_response.cc AddOutput checks the output's name only: a datatype other than
  // the config's is answered as the backend gave it (Triton's bls_decoupled example relies on it).
  it("answers an output whose datatype differs from the config's with the backend's datatype", () => {
    const i64 = { name: 'OUTPUT1', datatype: 'INT64' as const, shape: [2, 4], data: new Uint8Array(8 * 8) };
    const out = v.validate(request, { outputs: [i64] });
    expect(out.outputs.map((t) => [t.name, t.datatype, t.shape, t.data.length])).toEqual([['OUTPUT1', 'INT64', [2, 2, 2], 64]]);
    // its bytes must still match its own datatype and shape
    expect(() => v.validate(request, { outputs: [{ ...i64, data: new Uint8Array(32) }] })).toThrow(/whose data does not match its shape/);
  });
});
