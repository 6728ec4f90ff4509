// Triton's in-process inference API for native backends (spec §6.4): the BLS
// sample backend (sample-backends/native/bls, written against Triton's headers only, using the
// calls Triton's BLS example and Python backend make) forwards each request through
// TRITONSERVER_ServerInferAsync to an ONNX, a wasm, a native and a decoupled model, inspects its
// target with ServerModelIsReady / ModelConfig / ModelMetadata, cancels, and loads / unloads
// through the repository API — all routed into Warden's data plane with the model's principal.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeAddon } from '../../../host/src/platform/addon.js';
import { postJson, type TempRepo } from '../../helpers/repo.js';
import { copyRepoModel, nativeServerPerFile } from './helpers.js';

const io = (dir: 'input' | 'output', name: string, type: string, dims: string) => `${dir} { name: "${name}" data_type: ${type} dims: ${dims} }`;

function bls(repo: TempRepo, name: string, target: string, tensors: string[], extra = ''): void {
  repo.write(
    `${name}/config.pbtxt`,
    `backend: "warden_bls"\nmax_batch_size: 0\n${tensors.join('\n')}\nparameters { key: "target_model" value { string_value: "${target}" } }\n${extra}`,
  );
  mkdirSync(join(repo.path, name, '1'), { recursive: true });
}

const native = nativeServerPerFile(
  (repo) => {
    for (const m of ['identity_wasm', 'identity_native', 'repeat_native']) copyRepoModel(repo, m);
    repo.write(
      'identity_slow/config.pbtxt',
      `backend: "warden_identity"\nmax_batch_size: 0\n${io('input', 'INPUT0', 'TYPE_FP32', '[ -1 ]')}\n${io('output', 'OUTPUT0', 'TYPE_FP32', '[ -1 ]')}\ninstance_group { kind: KIND_CPU count: 1 }\nparameters { key: "execute_delay_ms" value { string_value: "1000" } }`,
    );
    mkdirSync(join(repo.path, 'identity_slow', '1'), { recursive: true });
    const idIo = [io('input', 'INPUT0', 'TYPE_FP32', '[ -1 ]'), io('output', 'OUTPUT0', 'TYPE_FP32', '[ -1 ]')];
    // Looser dims than the target's [16]: the target's own validation answers a bad shape.
    bls(repo, 'bls_onnx', 'addsub_onnx', [
      io('input', 'INPUT0', 'TYPE_FP32', '[ -1 ]'),
      io('input', 'INPUT1', 'TYPE_FP32', '[ -1 ]'),
      io('output', 'OUTPUT0', 'TYPE_FP32', '[ -1 ]'),
      io('output', 'OUTPUT1', 'TYPE_FP32', '[ -1 ]'),
    ]);
    bls(repo, 'bls_wasm', 'identity_wasm', idIo);
    bls(repo, 'bls_native', 'identity_native', idIo);
    // The BLS backend in a backend-host process: its in-process calls come back to this server.
    bls(repo, 'bls_isolated', 'identity_native', idIo, 'parameters { key: "warden.isolation" value { string_value: "process" } }');
    bls(repo, 'bls_slow', 'identity_slow', idIo, 'instance_group { kind: KIND_CPU count: 2 }');
    bls(repo, 'bls_missing', 'no_such_model', idIo);
    // calls itself: refused as recursion (the call chain of its waiting request holds it), not waited on
    bls(repo, 'bls_self', 'bls_self', idIo);
    bls(repo, 'bls_evil', '../../../etc', idIo);
    bls(repo, 'bls_repeat', 'repeat_native', [
      io('input', 'IN', 'TYPE_INT32', '[ -1 ]'),
      io('input', 'DELAY', 'TYPE_UINT32', '[ -1 ]'),
      io('input', 'WAIT', 'TYPE_UINT32', '[ 1 ]'),
      io('output', 'OUT', 'TYPE_INT32', '[ -1 ]'),
      io('output', 'IDX', 'TYPE_UINT32', '[ -1 ]'),
    ]);
    // An ensemble over the BLS target (a dependent: ServerUnloadModelAndDependents unloads it too).
    repo.write(
      'ens_identity/config.pbtxt',
      `platform: "ensemble"\nmax_batch_size: 0\n${io('input', 'IN', 'TYPE_FP32', '[ -1 ]')}\n${io('output', 'OUT', 'TYPE_FP32', '[ -1 ]')}\n` +
        'ensemble_scheduling { step { model_name: "identity_native" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } }',
    );
    mkdirSync(join(repo.path, 'ens_identity', '1'), { recursive: true });
  },
  { examples: ['addsub_onnx'], timeoutMs: 120_000 },
);

const f32 = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [data.length], data });
const infer = (model: string, body: unknown) => postJson(`${native.url}/v2/models/${model}/infer`, body);
const byName = (outputs: { name: string; data: number[] }[]) => Object.fromEntries(outputs.map((o) => [o.name, o.data]));

describe('BLS: a native backend calls other models through TRITONSERVER_ServerInferAsync', () => {
  it('ONNX target: sums and differences come back through the backend allocator, with the target metadata', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const b = Array.from({ length: 16 }, () => 2);
    const r = await infer('bls_onnx', { id: 'req-1', inputs: [f32('INPUT0', a), f32('INPUT1', b)] });
    expect(r.status, r.text).toBe(200);
    expect(byName(r.json.outputs)).toEqual({ OUTPUT0: a.map((x) => x + 2), OUTPUT1: a.map((x) => x - 2) });
    expect(r.json.parameters).toMatchObject({
      bls_responses: 1,
      target_platform: 'onnxruntime_onnx',
      target_decoupled: false,
      target_response_model: 'addsub_onnx',
      target_response_id: 'req-1/bls',
    });
  });

  it('wasm and native targets, and only the requested outputs are requested', async () => {
    for (const model of ['bls_wasm', 'bls_native']) {
      const r = await infer(model, { inputs: [f32('INPUT0', [1.5, -2, 3])] });
      expect(r.status, `${model}: ${r.text}`).toBe(200);
      expect(r.json.outputs).toEqual([{ name: 'OUTPUT0', datatype: 'FP32', shape: [3], data: [1.5, -2, 3] }]);
    }
  });

  it('decoupled target: every streamed response is received (then the flags-only final), outputs concatenated', async () => {
    const r = await infer('bls_repeat', {
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [3], data: [10, 20, 30] },
        { name: 'DELAY', datatype: 'UINT32', shape: [3], data: [0, 10, 10] },
        { name: 'WAIT', datatype: 'UINT32', shape: [1], data: [0] },
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect(byName(r.json.outputs)).toEqual({ OUT: [10, 20, 30], IDX: [0, 1, 2] });
    expect(r.json.parameters).toMatchObject({ bls_responses: 3, target_decoupled: true });
  });

  it("the target's errors reach the caller with their code; an unknown target is 'not ready'", async () => {
    const bad = await infer('bls_onnx', { inputs: [f32('INPUT0', [1, 2]), f32('INPUT1', [1, 2])] });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/unexpected shape for input 'INPUT0' for model 'addsub_onnx'/);
    const missing = await infer('bls_missing', { inputs: [f32('INPUT0', [1])] });
    expect(missing.status).toBe(503);
    expect(missing.json.error).toBe("bls: target model 'no_such_model' is not ready");
  });

  it('a call back into the calling model is refused as recursion, as for Python and sandboxed backends', async () => {
    const r = await infer('bls_self', { inputs: [f32('INPUT0', [1])] });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/call to model 'bls_self' refused: the model is already on this call chain \(recursion\)/);
  });

  it('TRITONSERVER_InferenceRequestCancel: a queued in-process request is dropped with CANCELLED, the other completes', async () => {
    const slow = infer('bls_slow', { inputs: [f32('INPUT0', [1])] });
    // The first occupies identity_slow's only instance (1 s); the second's in-process request queues.
    const pending = async () => (await (await fetch(`${native.url}/v2/models/identity_slow/stats`)).json()).model_stats[0].pending_count;
    await expect.poll(pending, { interval: 10 }).toBe(1);
    const cancelled = await infer('bls_slow', { inputs: [f32('INPUT0', [2])], parameters: { cancel_after_ms: 50 } });
    expect(cancelled.json.error).toMatch(/cancel/i);
    expect((await slow).status).toBe(200);
  });

  it('from a backend-host process (warden.isolation=process): calls, queries and errors are routed back to this server', async () => {
    const r = await infer('bls_isolated', { inputs: [f32('INPUT0', [3, 1, 4])] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0]).toMatchObject({ name: 'OUTPUT0', shape: [3], data: [3, 1, 4] });
    expect(r.json.parameters).toMatchObject({ bls_responses: 1, target_response_model: 'identity_native' });
    const raw = await infer('bls_isolated', { inputs: [f32('INPUT0', [2, 7])], parameters: { raw_input: true } });
    expect(raw.status, raw.text).toBe(200);
    expect(raw.json.outputs[0].data).toEqual([2, 7]);
    // The target's own validation error comes back with its code through both processes.
    const bad = await infer('bls_isolated', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2, 1], data: [1, 2] }] });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/unexpected shape for input 'INPUT0'/);
  });

  it('TRITONSERVER_InferenceRequestAddRawInput: datatype and shape come from the target config (shape from the byte size)', async () => {
    const r = await infer('bls_native', { inputs: [f32('INPUT0', [1, 2, 3, 4, 5])], parameters: { raw_input: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0]).toMatchObject({ name: 'OUTPUT0', datatype: 'FP32', shape: [5], data: [1, 2, 3, 4, 5] });
    // Triton's rule: a raw input is the only input (the ONNX target has two).
    const two = await infer('bls_onnx', { inputs: [f32('INPUT0', Array(16).fill(1)), f32('INPUT1', Array(16).fill(2))], parameters: { raw_input: true } });
    expect(two.status).toBe(400);
    expect(two.json.error).toBe("raw input 'INPUT1' can't be added to request with other inputs");
  });

  it('unloads and loads its target (ServerUnloadModel, ServerLoadModel, ServerLoadModelWithParameters)', async () => {
    const stateOf = async (name: string) =>
      (await postJson(`${native.url}/v2/repository/index`, {})).json.find((m: { name: string }) => m.name === name)?.state;
    expect(await stateOf('ens_identity')).toBe('READY');
    const gone = await infer('bls_native', { inputs: [f32('INPUT0', [1])], parameters: { control: 'unload' } });
    expect(gone.status).toBe(503);
    expect(gone.json.error).toBe("bls: target model 'identity_native' is not ready");
    // TRITONSERVER_ServerUnloadModel returns before the unload ends (Triton's contract): UNLOADING first
    await expect.poll(() => stateOf('identity_native')).toBe('UNAVAILABLE');
    expect(await stateOf('ens_identity')).toBe('READY'); // a plain unload leaves dependents loaded, as Triton
    const back = await infer('bls_native', { inputs: [f32('INPUT0', [4])], parameters: { control: 'load' } });
    expect(back.status, back.text).toBe(200);
    expect(back.json.outputs[0].data).toEqual([4]);
    const config = JSON.stringify({
      backend: 'warden_identity',
      max_batch_size: 0,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      parameters: { execute_delay_ms: { string_value: '1' } },
    });
    const reloaded = await infer('bls_native', { inputs: [f32('INPUT0', [5])], parameters: { control: `load_config:${config}` } });
    expect(reloaded.status, reloaded.text).toBe(200);
    const cfg = await (await fetch(`${native.url}/v2/models/identity_native/config`)).json();
    expect(cfg.parameters.execute_delay_ms.string_value).toBe('1');
    const dep = await infer('bls_native', { inputs: [f32('INPUT0', [1])], parameters: { control: 'unload_dependents' } });
    expect(dep.status).toBe(503);
    await expect.poll(() => stateOf('identity_native')).toBe('UNAVAILABLE');
    await expect.poll(() => stateOf('ens_identity')).toBe('UNAVAILABLE'); // ServerUnloadModelAndDependents: the ensemble using it too
    expect((await infer('bls_native', { inputs: [f32('INPUT0', [6])], parameters: { control: 'load' } })).status).toBe(200);
    expect(await stateOf('ens_identity')).toBe('UNAVAILABLE'); // dependents are not reloaded with it
  });

  it('a hostile target name never reaches the filesystem: load refuses it, inference finds nothing', async () => {
    const load = await infer('bls_evil', { inputs: [f32('INPUT0', [1])], parameters: { control: 'load' } });
    expect(load.status).toBe(400);
    expect(load.json.error).toMatch(/^invalid model name '..\/..\/..\/etc'/);
    const plain = await infer('bls_evil', { inputs: [f32('INPUT0', [1])] });
    expect(plain.status).toBe(503);
    expect(plain.json.error).toBe("bls: target model '../../../etc' is not ready");
  });

  it('leaves nothing in flight and every allocator buffer released', async () => {
    expect(nativeAddon().inflightInferenceRequests()).toBe(0);
  });
});
