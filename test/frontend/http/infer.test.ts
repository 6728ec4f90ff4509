/**
 * HTTP inference over a real socket on Triton's example ONNX models: JSON and binary tensors,
 * raw binary, requested outputs, parameters, and every bad-input case the issue lists, each with
 * Triton's status code and the server left serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { getJson, postJson, simpleRequest, tempRepo, type TempRepo } from '../../helpers/repo.js';

const range = <T = number>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

let repo: TempRepo;
let server: RunningServer;
let url: string;

beforeAll(async () => {
  repo = tempRepo(['simple', 'simple_string', 'simple_int8', 'addsub_onnx']);
  server = await startTestServer(repo, { modelControlMode: 'none', metricsPort: 0, maxInputSize: 1 << 20 });
  url = server.httpUrl;
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

/** `simple` must still answer correctly (used after each bad request). */
async function expectSimpleServes(): Promise<void> {
  const r = await postJson(
    `${url}/v2/models/simple/infer`,
    simpleRequest(
      'INT32',
      range(16, (i) => i),
      range(16, () => 1),
    ),
  );
  expect(r.status).toBe(200);
  expect(r.json.outputs[0].data).toEqual(range(16, (i) => i + 1));
}

describe('JSON inference on the example models', () => {
  it('simple: OUTPUT0 = sum, OUTPUT1 = difference, batch 8', async () => {
    const a = range(128, (i) => i);
    const b = range(128, (i) => 2 * i - 7);
    const r = await postJson(`${url}/v2/models/simple/infer`, simpleRequest('INT32', a, b, 8, { id: 'req-7' }));
    expect(r.status).toBe(200);
    expect(r.json.id).toBe('req-7');
    expect(r.json.model_name).toBe('simple');
    expect(r.json.model_version).toBe('1');
    const out = Object.fromEntries(r.json.outputs.map((o: any) => [o.name, o]));
    expect(out.OUTPUT0).toMatchObject({ datatype: 'INT32', shape: [8, 16] });
    expect(out.OUTPUT0.data).toEqual(a.map((x, i) => x + b[i]!));
    expect(out.OUTPUT1.data).toEqual(a.map((x, i) => x - b[i]!));
  });

  it('simple_string: numbers written as BYTES', async () => {
    const a = range(16, (i) => String(i));
    const b = range(16, () => '10');
    const r = await postJson(`${url}/v2/models/simple_string/infer`, simpleRequest('BYTES', a, b));
    expect(r.status).toBe(200);
    const out = Object.fromEntries(r.json.outputs.map((o: any) => [o.name, o]));
    expect(out.OUTPUT0.datatype).toBe('BYTES');
    expect(out.OUTPUT0.data).toEqual(range(16, (i) => String(i + 10)));
    expect(out.OUTPUT1.data).toEqual(range(16, (i) => String(i - 10)));
  });

  it('simple_int8: INT8 with wraparound', async () => {
    const a = range(16, (i) => 120 + i - 8);
    const b = range(16, () => 10);
    const r = await postJson(`${url}/v2/models/simple_int8/infer`, simpleRequest('INT8', a, b));
    expect(r.status).toBe(200);
    const sum = r.json.outputs.find((o: any) => o.name === 'OUTPUT0').data;
    expect(sum).toEqual(a.map((x) => ((((x + 10 + 128) % 256) + 256) % 256) - 128));
  });

  it('addsub_onnx: FP32 [16], max_batch_size 0', async () => {
    const a = range(16, (i) => i / 4);
    const b = range(16, () => 0.5);
    const r = await postJson(`${url}/v2/models/addsub_onnx/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: a },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: b },
      ],
    });
    expect(r.status).toBe(200);
    const out = Object.fromEntries(r.json.outputs.map((o: any) => [o.name, o]));
    expect(out.OUTPUT0.shape).toEqual([16]);
    expect(out.OUTPUT0.data).toEqual(a.map((x) => x + 0.5));
    expect(out.OUTPUT1.data).toEqual(a.map((x) => x - 0.5));
  });

  it('returns only the requested outputs, and honours /versions/1', async () => {
    const r = await postJson(
      `${url}/v2/models/simple/versions/1/infer`,
      simpleRequest(
        'INT32',
        range(16, () => 5),
        range(16, () => 2),
        1,
        { outputs: [{ name: 'OUTPUT1' }] },
      ),
    );
    expect(r.status).toBe(200);
    expect(r.json.outputs.map((o: any) => o.name)).toEqual(['OUTPUT1']);
    expect(r.json.outputs[0].data).toEqual(range(16, () => 3));
  });
});

function binaryBody(header: unknown, ...tensors: Uint8Array[]): { body: Buffer; headerLength: number } {
  const h = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([h, ...tensors]), headerLength: h.length };
}

async function postBinary(path: string, body: Buffer, headerLength?: number) {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (headerLength !== undefined) headers['inference-header-content-length'] = String(headerLength);
  const res = await fetch(`${url}${path}`, { method: 'POST', body: new Uint8Array(body), headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe('binary tensor data extension', () => {
  const i32 = (xs: number[]) => new Uint8Array(Int32Array.from(xs).buffer);

  it('binary inputs and binary outputs (binary_data_output)', async () => {
    const a = range(16, (i) => i * 3);
    const b = range(16, (i) => i);
    const { body, headerLength } = binaryBody(
      {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
        ],
        parameters: { binary_data_output: true },
      },
      i32(a),
      i32(b),
    );
    const r = await postBinary('/v2/models/simple/infer', body, headerLength);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    const hl = Number(r.headers.get('inference-header-content-length'));
    const header = JSON.parse(r.body.subarray(0, hl).toString());
    expect(header.outputs.map((o: any) => [o.name, o.parameters.binary_data_size, o.data])).toEqual([
      ['OUTPUT0', 64, undefined],
      ['OUTPUT1', 64, undefined],
    ]);
    const rest = r.body.subarray(hl);
    const sum = new Int32Array(rest.buffer.slice(rest.byteOffset, rest.byteOffset + 64));
    const diff = new Int32Array(rest.buffer.slice(rest.byteOffset + 64, rest.byteOffset + 128));
    expect([...sum]).toEqual(a.map((x, i) => x + b[i]!));
    expect([...diff]).toEqual(a.map((x, i) => x - b[i]!));
  });

  it('per-output binary_data overrides the default', async () => {
    const { body, headerLength } = binaryBody(
      {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, () => 1) },
        ],
        outputs: [
          { name: 'OUTPUT0', parameters: { binary_data: false } },
          { name: 'OUTPUT1', parameters: { binary_data: true } },
        ],
      },
      i32(range(16, () => 4)),
    );
    const r = await postBinary('/v2/models/simple/infer', body, headerLength);
    expect(r.status).toBe(200);
    const hl = Number(r.headers.get('inference-header-content-length'));
    const header = JSON.parse(r.body.subarray(0, hl).toString());
    expect(header.outputs[0].data).toEqual(range(16, () => 5));
    expect(header.outputs[1].parameters.binary_data_size).toBe(64);
    expect(r.body.length).toBe(hl + 64);
  });

  it('binary BYTES input (length-prefixed elements)', async () => {
    const enc = (xs: string[]) =>
      Buffer.concat(
        xs.map((s) => {
          const b = Buffer.alloc(4 + s.length);
          b.writeUInt32LE(s.length);
          b.write(s, 4);
          return b;
        }),
      );
    const a = enc(range(16, (i) => String(i * 2)));
    const b = enc(range(16, () => '1'));
    const { body, headerLength } = binaryBody(
      {
        inputs: [
          { name: 'INPUT0', datatype: 'BYTES', shape: [1, 16], parameters: { binary_data_size: a.length } },
          { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16], parameters: { binary_data_size: b.length } },
        ],
      },
      a,
      b,
    );
    const r = await postBinary('/v2/models/simple_string/infer', body, headerLength);
    expect(r.status).toBe(200);
    const json = JSON.parse(r.body.toString());
    expect(json.outputs.find((o: any) => o.name === 'OUTPUT0').data).toEqual(range(16, (i) => String(i * 2 + 1)));
  });

  it('binary_data_size larger than the body is rejected, smaller leaves extra bytes rejected', async () => {
    const header = {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
      ],
    };
    const short = binaryBody(header, i32(range(16, () => 1)), i32(range(8, () => 1)));
    let r = await postBinary('/v2/models/simple/infer', short.body, short.headerLength);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body.toString()).error).toMatch(/unexpected size for input 'INPUT1', expecting 64 additional bytes/);
    const long = binaryBody(header, i32(range(16, () => 1)), i32(range(17, () => 1)));
    r = await postBinary('/v2/models/simple/infer', long.body, long.headerLength);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body.toString()).error).toMatch(/unexpected additional input data for model 'simple'/);
    await expectSimpleServes();
  });

  it('raw binary request (Inference-Header-Content-Length: 0) needs a single-input model', async () => {
    const r = await postBinary('/v2/models/simple/infer', Buffer.from(i32(range(16, () => 1))), 0);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body.toString()).error).toMatch(/Raw request must only have 1 input/);
  });
});

describe('bad input: Triton status codes, server unchanged', () => {
  const cases: [string, string, unknown, number, RegExp][] = [
    ['malformed JSON', 'simple', '{"inputs": [', 500, /failed to parse the request JSON buffer/], // tritonserver's 500 (TritonJson)
    [
      'wrong datatype',
      'simple',
      simpleRequest(
        'FP32',
        range(16, () => 1),
        range(16, () => 1),
      ),
      400,
      /data-type is 'FP32', but model 'simple' expects 'INT32'/,
    ],
    [
      'wrong shape',
      'simple',
      {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 8], data: range(8, () => 1) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, () => 1) },
        ],
      },
      400,
      /unexpected shape for input 'INPUT0' for model 'simple'. Expected \[-1,16\], got \[1,8\]/,
    ],
    [
      'batch over max_batch_size',
      'simple',
      simpleRequest(
        'INT32',
        range(144, () => 1),
        range(144, () => 1),
        9,
      ),
      400,
      /inference request batch-size must be <= 8 for 'simple'/,
    ],
    [
      'unknown input',
      'simple',
      {
        inputs: [
          ...simpleRequest(
            'INT32',
            range(16, () => 1),
            range(16, () => 1),
          ).inputs,
          { name: 'INPUT9', datatype: 'INT32', shape: [1, 16], data: range(16, () => 1) },
        ],
      },
      400,
      /unexpected inference input 'INPUT9' for model 'simple'/,
    ],
    [
      'unknown requested output',
      'simple',
      simpleRequest(
        'INT32',
        range(16, () => 1),
        range(16, () => 1),
        1,
        { outputs: [{ name: 'OUTPUT7' }] },
      ),
      400,
      /unexpected inference output 'OUTPUT7' for model 'simple'/,
    ],
    [
      'element count does not match shape',
      'simple',
      simpleRequest(
        'INT32',
        range(15, () => 1),
        range(16, () => 1),
      ),
      500,
      /Shape does not match true shape/,
    ],
    [
      'missing input',
      'simple',
      {
        inputs: [
          simpleRequest(
            'INT32',
            range(16, () => 1),
            [],
          ).inputs[0],
        ],
      },
      400,
      /expected 2 inputs but got 1 inputs for model 'simple'.*missing required input\(s\) \['INPUT1'\]/,
    ],
    [
      'non-integer data for INT32',
      'simple',
      simpleRequest(
        'INT32',
        range(16, () => 1.5),
        range(16, () => 1),
      ),
      500,
      /non-signed-integer/,
    ],
    [
      'reserved triton_ parameter',
      'simple',
      simpleRequest(
        'INT32',
        range(16, () => 1),
        range(16, () => 1),
        1,
        { parameters: { triton_x: 1 } },
      ),
      400,
      /reserved/,
    ],
    [
      'invalid datatype name',
      'simple',
      { inputs: [{ name: 'INPUT0', datatype: 'INT33', shape: [1, 16], data: [] }] },
      400,
      /invalid datatype for input INPUT0/,
    ],
  ];
  for (const [what, model, body, status, re] of cases) {
    it(what, async () => {
      const r = await postJson(`${url}/v2/models/${model}/infer`, body);
      expect(r.status).toBe(status);
      expect(r.json.error).toMatch(re);
      await expectSimpleServes();
    });
  }

  it('unknown model and unknown version: 404', async () => {
    let r = await postJson(`${url}/v2/models/nope/infer`, {});
    expect(r.status).toBe(404);
    expect(r.json.error).toBe("Request for unknown model: 'nope' is not found");
    r = await postJson(
      `${url}/v2/models/simple/versions/7/infer`,
      simpleRequest(
        'INT32',
        range(16, () => 1),
        range(16, () => 1),
      ),
    );
    expect(r.status).toBe(404);
    expect(r.json.error).toBe("Request for unknown model: 'simple' version 7 is not found");
  });

  it('a body over --http-max-input-size: 400, server keeps serving', async () => {
    const big = simpleRequest(
      'INT32',
      range(16, () => 1),
      range(16, () => 1),
      1,
      { pad: 'x'.repeat(1 << 20) },
    );
    const r = await postJson(`${url}/v2/models/simple/infer`, big);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/exceeds the maximum allowed value/);
    await expectSimpleServes();
  });

  it('wrong method: 405; unknown path: 404', async () => {
    const r = await fetch(`${url}/v2/models/simple/infer`);
    expect(r.status).toBe(405);
    expect(await r.json()).toEqual({ error: 'Method Not Allowed' });
    const n = await fetch(`${url}/v2/nothing/here`);
    expect(n.status).toBe(404);
    expect(await n.json()).toEqual({ error: 'Not Found' });
    const v = await fetch(`${url}/v2/models/simple/versions/x1/ready`);
    expect(v.status).toBe(404);
  });

  it('gzip-compressed request bodies are accepted', async () => {
    const { gzipSync } = await import('node:zlib');
    const body = gzipSync(
      Buffer.from(
        JSON.stringify(
          simpleRequest(
            'INT32',
            range(16, () => 2),
            range(16, () => 3),
          ),
        ),
      ),
    );
    const res = await fetch(`${url}/v2/models/simple/infer`, { method: 'POST', body, headers: { 'content-encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect((await res.json()).outputs[0].data).toEqual(range(16, () => 5));
  });
});

describe('request parameters and statistics', () => {
  it('counts inferences and executions exactly', async () => {
    const before = (await getJson(`${url}/v2/models/addsub_onnx/stats`)).json.model_stats[0];
    const body = {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: range(16, () => 1) },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: range(16, () => 1) },
      ],
    };
    for (let i = 0; i < 3; i++) expect((await postJson(`${url}/v2/models/addsub_onnx/infer`, body)).status).toBe(200);
    await postJson(`${url}/v2/models/addsub_onnx/infer`, { inputs: [] });
    const after = (await getJson(`${url}/v2/models/addsub_onnx/stats`)).json.model_stats[0];
    expect(after.name).toBe('addsub_onnx');
    expect(after.version).toBe('1');
    expect(after.inference_count - before.inference_count).toBe(3);
    expect(after.execution_count - before.execution_count).toBe(3);
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(3);
    expect(after.inference_stats.compute_infer.ns).toBeGreaterThan(before.inference_stats.compute_infer.ns);
    expect(after.last_inference).toBeGreaterThan(0);
    const all = (await getJson(`${url}/v2/models/stats`)).json.model_stats.map((s: any) => s.name).sort();
    expect(all).toEqual(['addsub_onnx', 'simple', 'simple_int8', 'simple_string']);
    const bad = await getJson(`${url}/v2/models/nope/stats`);
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe("requested model 'nope' is not available");
  });

  it('batch counts as its elements in inference_count', async () => {
    const before = (await getJson(`${url}/v2/models/simple/stats`)).json.model_stats[0];
    expect(
      (
        await postJson(
          `${url}/v2/models/simple/infer`,
          simpleRequest(
            'INT32',
            range(64, () => 1),
            range(64, () => 1),
            4,
          ),
        )
      ).status,
    ).toBe(200);
    const after = (await getJson(`${url}/v2/models/simple/stats`)).json.model_stats[0];
    expect(after.inference_count - before.inference_count).toBe(4);
    expect(after.execution_count - before.execution_count).toBe(1);
    expect(after.batch_stats.find((b: any) => b.batch_size === 4).compute_infer.count).toBeGreaterThanOrEqual(1);
  });

  it('Prometheus metrics carry Triton names and labels', async () => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    const line = (name: string, extra = '') => new RegExp(`^${name}\\{model="simple",version="1"${extra}\\} (\\d+(\\.\\d+)?)$`, 'm');
    for (const name of [
      'nv_inference_request_success',
      'nv_inference_count',
      'nv_inference_exec_count',
      'nv_inference_request_duration_us',
      'nv_inference_queue_duration_us',
      'nv_inference_compute_input_duration_us',
      'nv_inference_compute_infer_duration_us',
      'nv_inference_compute_output_duration_us',
    ]) {
      expect(text).toMatch(line(name));
    }
    const success = Number(line('nv_inference_request_success').exec(text)![1]);
    const stats = (await getJson(`${url}/v2/models/simple/stats`)).json.model_stats[0];
    expect(success).toBe(stats.inference_stats.success.count);
    expect(text).toMatch(/^nv_inference_request_failure\{model="simple",version="1",reason="OTHER"\} \d+$/m);
    const other = await fetch(`${server.metricsUrl}/other`);
    expect(other.status).toBe(200);
    expect(await other.text()).toBe('');
  });
});
