/**
 * The sequence batcher over HTTP on Triton's example sequence models (real ONNX): what Triton's
 * `simple_http_sequence_sync_infer_client.py` sends — two interleaved sequences of values — and
 * the results it expects. The ONNX models compute, per request, OUTPUT = READY × (INPUT + START)
 * (`simple_sequence`, direct strategy) and READY × (INPUT + START + END × CORRID)
 * (`simple_dyna_sequence`, oldest strategy, UINT64 CORRID), so correct results show the control
 * inputs the batcher injected. Errors: Triton's 400s for sequence requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLES, postJson, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;

beforeAll(async () => {
  repo = tempRepo(['simple', 'simple_sequence', 'simple_dyna_sequence']);
  // An implicit state whose initial_state data_file is missing: the load fails with the reason.
  repo.addExample('simple_sequence', 'missing_state');
  repo.write(
    'missing_state/config.pbtxt',
    readFileSync(join(EXAMPLES, 'simple_sequence/config.pbtxt'), 'utf8')
      .replace('name: "simple_sequence"', 'name: "missing_state"')
      .replace(
        'sequence_batching {',
        'sequence_batching {\n  state [ { input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_INT32 dims: [ 1 ] initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] data_file: "nope.bin" name: "init" } ] } ]',
      ),
  );
  server = await startTestServer(repo, { modelControlMode: 'none', metricsPort: 0 });
  url = server.httpUrl;
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

/** The values of Triton's sequence client example. */
const VALUES = [11, 7, 5, 3, 2, 0, 1];

/** One sequence step: INPUT [1,1] = value, with the sequence parameters. */
async function step(model: string, id: number | string, value: number, start: boolean, end: boolean): Promise<number> {
  const r = await postJson(`${url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }],
    outputs: [{ name: 'OUTPUT' }],
    parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
  });
  expect(r.status, r.text).toBe(200);
  expect(r.json.outputs.map((o: any) => o.name)).toEqual(['OUTPUT']);
  expect(r.json.outputs[0].shape).toEqual([1, 1]);
  return r.json.outputs[0].data[0];
}

/**
 * Run sequences side by side, step by step; `together` sends each step of all sequences at once
 * (so the oldest strategy can batch them), otherwise one after another.
 */
async function interleave(model: string, seqs: { id: number | string; values: number[] }[], together: boolean): Promise<number[][]> {
  const results: number[][] = seqs.map(() => []);
  const n = seqs[0]!.values.length;
  for (let i = 0; i < n; i++) {
    const send = (k: number) => step(model, seqs[k]!.id, seqs[k]!.values[i]!, i === 0, i === n - 1);
    if (together) {
      const got = await Promise.all(seqs.map((_, k) => send(k)));
      got.forEach((v, k) => results[k]!.push(v));
    } else {
      for (let k = 0; k < seqs.length; k++) results[k]!.push(await send(k));
    }
  }
  return results;
}

/** Expected results of Triton's example: START adds 1 to the first value; with `corrid`, END adds the id. */
function expected(first: number, values: number[], corrid?: number): number[] {
  return [first + 1, ...values.map((v, i) => v + (corrid !== undefined && i === values.length - 1 ? corrid : 0))];
}

describe('simple_sequence (direct): Triton sequence client example', () => {
  it('two interleaved integer-id sequences, one after another', async () => {
    const [r0, r1] = await interleave(
      'simple_sequence',
      [
        { id: 1000, values: [0, ...VALUES] },
        { id: 1001, values: [100, ...VALUES.map((v) => -v)] },
      ],
      false,
    );
    expect(r0).toEqual(expected(0, VALUES));
    expect(r1).toEqual(
      expected(
        100,
        VALUES.map((v) => -v),
      ),
    );
  });

  it('the same two sequences sent concurrently, plus a string-id sequence', async () => {
    const [r0, r1, r2] = await interleave(
      'simple_sequence',
      [
        { id: 1000, values: [0, ...VALUES] },
        { id: 1001, values: [100, ...VALUES.map((v) => -v)] },
        { id: 'b1d0a7c2-4f5e-4e1a-9d49-5f2c3f0e7a11', values: [20, ...VALUES.map((v) => -v)] },
      ],
      true,
    );
    expect(r0).toEqual(expected(0, VALUES));
    expect(r1).toEqual(
      expected(
        100,
        VALUES.map((v) => -v),
      ),
    );
    expect(r2).toEqual(
      expected(
        20,
        VALUES.map((v) => -v),
      ),
    );
  });
});

describe('simple_dyna_sequence (oldest, CORRID): Triton sequence client example with --dyna', () => {
  it('integer ids: END adds the correlation id', async () => {
    const [r0, r1] = await interleave(
      'simple_dyna_sequence',
      [
        { id: 1000, values: [0, ...VALUES] },
        { id: 1001, values: [100, ...VALUES.map((v) => -v)] },
      ],
      false,
    );
    expect(r0).toEqual(expected(0, VALUES, 1000));
    expect(r1).toEqual(
      expected(
        100,
        VALUES.map((v) => -v),
        1001,
      ),
    );
  });

  it('concurrent integer and string ids (a decimal string id reaches the UINT64 CORRID as its value)', async () => {
    const [r0, r1, r2] = await interleave(
      'simple_dyna_sequence',
      [
        { id: 1002, values: [0, ...VALUES] },
        { id: 1003, values: [100, ...VALUES.map((v) => -v)] },
        { id: '1004', values: [20, ...VALUES.map((v) => -v)] },
      ],
      true,
    );
    expect(r0).toEqual(expected(0, VALUES, 1002));
    expect(r1).toEqual(
      expected(
        100,
        VALUES.map((v) => -v),
        1003,
      ),
    );
    expect(r2).toEqual(
      expected(
        20,
        VALUES.map((v) => -v),
        1004,
      ),
    );
  });

  it('a string id that is not an integer cannot fill the UINT64 CORRID: 400', async () => {
    const r = await postJson(`${url}/v2/models/simple_dyna_sequence/infer`, {
      inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [1] }],
      parameters: { sequence_id: 'abc', sequence_start: true },
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/sequence ID 'abc' for model 'simple_dyna_sequence' must be an unsigned integer/);
  });
});

describe('loading', () => {
  it('the sequence examples are READY; a missing initial_state data_file makes the model UNAVAILABLE with the reason', async () => {
    const index = (await postJson(`${url}/v2/repository/index`, {})).json as { name: string; state: string; reason?: string }[];
    const by = Object.fromEntries(index.map((e) => [e.name, e]));
    expect(by.simple_sequence?.state).toBe('READY');
    expect(by.simple_dyna_sequence?.state).toBe('READY');
    expect(by.missing_state?.state).toBe('UNAVAILABLE');
    expect(by.missing_state?.reason).toBe("sequence_batching initial_state data_file 'nope.bin' does not name a file inside the model directory");
  });
});

describe("Triton's sequence errors", () => {
  const body = (parameters: Record<string, unknown>, rows = 1) => ({
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [rows, 1], data: Array(rows).fill(1) }],
    parameters,
  });

  it('no correlation id on a sequence model: 400', async () => {
    for (const parameters of [{}, { sequence_id: 0, sequence_start: true }, { sequence_id: '' }]) {
      const r = await postJson(`${url}/v2/models/simple_sequence/infer`, body(parameters));
      expect(r.status).toBe(400);
      expect(r.json.error).toBe("inference request to model 'simple_sequence' must specify a non-zero or non-empty correlation ID");
    }
  });

  it('a request without START for an unknown sequence: 400, also after that sequence ended', async () => {
    let r = await postJson(`${url}/v2/models/simple_sequence/infer`, body({ sequence_id: 4242 }));
    expect(r.status).toBe(400);
    expect(r.json.error).toBe(
      "inference request for sequence 4242 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
    );
    expect(await step('simple_sequence', 4243, 5, true, true)).toBe(6);
    r = await postJson(`${url}/v2/models/simple_sequence/infer`, body({ sequence_id: 4243 }));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/sequence 4243 .* must specify the START flag/);
    r = await postJson(`${url}/v2/models/simple_dyna_sequence/infer`, body({ sequence_id: 'nope' }));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/^inference request for sequence nope to model 'simple_dyna_sequence' must specify the START flag/);
  });

  it('batch size above 1: 400', async () => {
    const r = await postJson(`${url}/v2/models/simple_sequence/infer`, body({ sequence_id: 7, sequence_start: true }, 2));
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("inference request to model 'simple_sequence' must specify batch-size 1 due to requirements of sequence batcher");
  });

  it('sequence parameters on a model without a sequence batcher are accepted and ignored (Triton core infer_request.cc)', async () => {
    const range = Array.from({ length: 16 }, (_, i) => i);
    for (const parameters of [
      { sequence_id: 5 },
      { sequence_id: 'x' },
      { sequence_start: true },
      { sequence_end: true },
      { sequence_id: 0, sequence_start: false },
    ]) {
      const r = await postJson(`${url}/v2/models/simple/infer`, simpleRequest('INT32', range, range, 1, { parameters }));
      expect(r.status, r.text).toBe(200);
      expect(r.json.outputs[0].data).toEqual(range.map((x) => 2 * x));
    }
  });
});
