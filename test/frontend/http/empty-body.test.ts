/**
 * An empty `/infer` body is what Triton makes of it (spec §2): with no
 * `Inference-Header-Content-Length` the header length is the body's length, 0, and a header length
 * of 0 is a raw binary request (http_server.cc `EVRequestToTritonRequest` → `EVBufferToRawInput`,
 * "zero-shape tensor"); the core then deduces the one input's shape from 0 bytes
 * (infer_request.cc `Normalize`). So: a model with one input of one variable dim gets a zero-element
 * tensor and answers 200 with a binary zero-element output; any other model gets 400 (more than
 * one input, fixed dims that need bytes). The same on Fastify's route, the fast path and a
 * front-end thread, and never a crash or a 5xx.
 */
import { describe, expect, it } from 'vitest';
import { HTTP_FRONT_ENDS, serverPerSuite } from '../../helpers/servers.js';
import { fetchJson, tempRepo } from '../../helpers/repo.js';
import { executeBackend, resolverOf } from '../../helpers/js-backend.js';

/** `backend: "echo_first"`: OUTPUT0 = INPUT0 (counts executions). */
let executions = 0;
const echoFirst = () =>
  resolverOf(
    executeBackend('echo_first', async (requests, senders) => {
      executions += requests.length;
      requests.forEach((r, i) => senders[i]!.send({ outputs: [{ ...r.inputs[0]!, name: 'OUTPUT0' }] }, true));
    }),
  );

const config = (inputs: string, dims: string) => `
backend: "echo_first"
max_batch_size: 0
input [ ${inputs} ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: ${dims} } ]
`;

describe.each(HTTP_FRONT_ENDS)('an empty /infer body (%s)', (_label, httpOpts) => {
  const suite = serverPerSuite(async () => {
    const repo = tempRepo();
    repo.write('variable/config.pbtxt', config('{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }', '[ -1 ]'));
    repo.write('fixed/config.pbtxt', config('{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }', '[ 4 ]'));
    repo.write(
      'two_inputs/config.pbtxt',
      config('{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ -1 ] }', '[ -1 ]'),
    );
    for (const m of ['variable', 'fixed', 'two_inputs']) repo.write(`${m}/1/.keep`, '');
    return { repo, opts: { modelControlMode: 'none', backendResolvers: [echoFirst()], ...httpOpts } };
  });

  const post = (model: string, headers: Record<string, string> = {}) =>
    fetchJson(`${suite.server.httpUrl}/v2/models/${model}/infer`, { method: 'POST', body: '', headers });

  it('one input of a variable dim: a zero-element tensor, answered 200 with a binary zero-element output', async () => {
    const before = executions;
    for (const headers of [{}, { 'content-type': 'application/json' }, { 'inference-header-content-length': '0' }] as Record<string, string>[]) {
      const r = await post('variable', headers);
      expect(r.status, JSON.stringify(headers)).toBe(200);
      expect(r.headers.get('inference-header-content-length')).toBe(String(r.text.length));
      expect(JSON.parse(r.text)).toEqual({
        model_name: 'variable',
        model_version: '1',
        outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [0], parameters: { binary_data_size: 0 } }],
      });
    }
    expect(executions - before).toBe(3);
  });

  it('two inputs, or fixed dims that need bytes: 400 with what was wrong, nothing executed', async () => {
    const before = executions;
    const two = await post('two_inputs');
    expect(two.status).toBe(400);
    expect(two.json.error).toBe("Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'two_inputs' model configuration");
    const fixed = await post('fixed');
    expect(fixed.status).toBe(400);
    expect(fixed.json.error).toMatch(/raw input 'INPUT0'/);
    expect(executions).toBe(before);
  });
});
