/**
 * Numbers a double cannot hold (spec §1.8): Triton's JSON parser (rapidjson, triton_json.h) stops
 * at a literal beyond ±DBL_MAX with "Number too big to be stored in double", so `1e400` is a
 * malformed request (500, as tritonserver answers every malformed request JSON), never an `Infinity` element that
 * would come back in the response. Non-finite values a model really produces are written as
 * Triton writes them (rapidjson's kWriteNanAndInfFlag: `NaN`, `Infinity`, `-Infinity`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRequestJson } from '../../../host/src/frontend/http/json-text.js';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { fetchJson, postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { executeBackend, resolverOf } from '../../helpers/js-backend.js';

/** `backend: "echo32"`: OUTPUT0 = INPUT0. */
const echo32 = () =>
  resolverOf(
    executeBackend('echo32', async (requests, senders) => {
      requests.forEach((r, i) => senders[i]!.send({ outputs: [{ ...r.inputs[0]!, name: 'OUTPUT0' }] }, true));
    }),
  );

const CONFIG = (dt: string) => `
backend: "echo32"
max_batch_size: 0
input [ { name: "INPUT0" data_type: ${dt} dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: ${dt} dims: [ -1 ] } ]
`;

describe('parseRequestJson: literals beyond a double', () => {
  it.each([
    ['1e400', '1e400'],
    ['-1e400', '-1e400'],
    ['1E309', '1E309'],
    ['1234567890e300 (1.2e309)', '1234567890e300'],
    ['a 401-digit integer', '1' + '0'.repeat(400)],
    ['a 320-digit decimal', '-' + '9'.repeat(320) + '.5'],
    ['1e999 inside an array', '[1, 2, 1e999]'],
  ])('%s is refused with its position', (_what, text) => {
    expect(() => parseRequestJson(Buffer.from(`{"a": ${text}}`))).toThrow(
      /^failed to parse the request JSON buffer: Number too big to be stored in double\. at \d+$/,
    );
  });

  it('large but finite literals, underflow and long exact integers still parse', () => {
    expect(parseRequestJson(Buffer.from('{"a": [1.7976931348623157e308, 1e-400, 2e-310, 1e308]}'))).toEqual({ a: [1.7976931348623157e308, 0, 2e-310, 1e308] });
    expect(parseRequestJson(Buffer.from('{"a": 9223372036854775807}'))).toEqual({ a: 9223372036854775807n });
    expect(parseRequestJson(Buffer.from('{"e": true, "f": false, "x": "1e400"}'))).toEqual({ e: true, f: false, x: '1e400' });
  });
});

describe.each([
  ['Fastify', false],
  ['fast path', true],
])('over HTTP (%s)', (_label, fastPath) => {
  let repo: TempRepo;
  let server: RunningServer;
  beforeAll(async () => {
    repo = tempRepo();
    repo.addModel('echo_fp32', CONFIG('TYPE_FP32'));
    repo.addModel('echo_fp64', CONFIG('TYPE_FP64'));
    server = await startTestServer(repo, {
      modelControlMode: 'none',
      backendResolvers: [echo32()],
      httpFastPath: fastPath,
    });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('an input literal of 1e400 is a 500 naming the problem (as tritonserver), on /infer and /generate', async () => {
    for (const model of ['echo_fp32', 'echo_fp64']) {
      const dt = model === 'echo_fp32' ? 'FP32' : 'FP64';
      const body = `{"inputs":[{"name":"INPUT0","datatype":"${dt}","shape":[2],"data":[1, 1e400]}]}`;
      const r = await fetchJson(`${server.httpUrl}/v2/models/${model}/infer`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      expect(r.status, model).toBe(500);
      expect(r.json.error).toMatch(/Number too big to be stored in double/);
      expect(r.text).not.toMatch(/Infinity/);
      const g = await postJson(`${server.httpUrl}/v2/models/${model}/generate`, '{"INPUT0": [1e400]}');
      expect(g.status, model).toBe(500);
      expect(g.json.error).toMatch(/Number too big to be stored in double/);
    }
  });

  it('non-finite outputs are written as Triton writes them; every finite answer is strict JSON', async () => {
    // Binary input (no JSON literal can say NaN): the model echoes NaN, +Inf, -Inf, 1.5.
    const header = JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [4], parameters: { binary_data_size: 16 } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
    });
    const raw = Buffer.concat([Buffer.from(header), Buffer.from(Float32Array.of(NaN, Infinity, -Infinity, 1.5).buffer)]);
    const r = await fetchJson(`${server.httpUrl}/v2/models/echo_fp32/infer`, {
      method: 'POST',
      body: raw,
      headers: { 'inference-header-content-length': String(header.length) },
    });
    expect(r.status).toBe(200);
    expect(r.text).toContain('"data":[NaN,Infinity,-Infinity,1.5]');
    const fine = await postJson(`${server.httpUrl}/v2/models/echo_fp64/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP64', shape: [2], data: [1.7976931348623157e308, -2.5] }],
    });
    expect(fine.status).toBe(200);
    expect(JSON.parse(fine.text).outputs[0].data).toEqual([1.7976931348623157e308, -2.5]);
  });
});
