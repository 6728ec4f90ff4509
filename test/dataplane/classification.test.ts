/**
 * Classification extension (spec §3.10): `parameters: {classification: K}` on a requested output
 * returns the top K as BYTES "value:index[:label]", labels from the output's label_filename.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyTensor } from '../../host/src/dataplane/classification.js';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { JsBackendResolver } from '../helpers/js-backend.js';
import { getJson, postJson, tempRepo, type TempRepo } from '../helpers/repo.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;

const bytesOf = (strings: string[]) => strings;

beforeAll(async () => {
  repo = tempRepo([]);
  // echo backend: OUTPUT0 = INPUT0
  const echo = (maxBatch: number, datatype: string, dims: number, outputExtra = '') => `
backend: "jstest"
max_batch_size: ${maxBatch}
input [ { name: "INPUT0" data_type: ${datatype} dims: [ ${dims} ] } ]
output [ { name: "OUTPUT0" data_type: ${datatype} dims: [ ${dims} ]${outputExtra} } ]
`;
  repo.addModel('labelled', echo(8, 'TYPE_INT32', 4, ' label_filename: "labels.txt"'));
  repo.write('labelled/labels.txt', 'cat\ndog\nbird\nfish\n');
  repo.addModel('flat', echo(0, 'TYPE_FP32', 5));
  repo.addModel('flags', echo(0, 'TYPE_BOOL', 2));
  server = await startTestServer(repo, { modelControlMode: 'none', backendResolvers: [new JsBackendResolver()] });
  url = server.httpUrl;
});

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

describe('classification', () => {
  it('is advertised', async () => {
    expect((await getJson(`${url}/v2`)).json.extensions).toContain('classification');
  });

  it('returns the top K per batch element with labels, as BYTES [batch, K]', async () => {
    const r = await postJson(`${url}/v2/models/labelled/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2, 4], data: [5, 9, 1, 7, 0, -3, 4, 4] }],
      outputs: [{ name: 'OUTPUT0', parameters: { classification: 2 } }],
    });
    expect(r.status).toBe(200);
    const out = r.json.outputs[0];
    expect(out).toMatchObject({ name: 'OUTPUT0', datatype: 'BYTES', shape: [2, 2] });
    // ties keep the lower index first
    expect(out.data).toEqual(bytesOf(['9:1:dog', '7:3:fish', '4:2:bird', '4:3:fish']));
  });

  it('caps K at the element count and prints floats as std::to_string (no labels: value:index)', async () => {
    const r = await postJson(`${url}/v2/models/flat/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [5], data: [0.5, 3.3, -1, 2.25, 0] }],
      outputs: [{ name: 'OUTPUT0', parameters: { classification: 10 } }],
    });
    expect(r.status).toBe(200);
    expect(r.json.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: [5] });
    expect(r.json.outputs[0].data).toEqual(['3.300000:1', '2.250000:3', '0.500000:0', '0.000000:4', '-1.000000:2']);
  });

  it('works with binary output and leaves other outputs alone', async () => {
    const r = await fetch(`${url}/v2/models/flat/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [5], data: [1, 2, 3, 4, 5] }],
        outputs: [{ name: 'OUTPUT0', parameters: { classification: 1, binary_data: true } }],
      }),
    });
    expect(r.status).toBe(200);
    const buf = Buffer.from(await r.arrayBuffer());
    const hl = Number(r.headers.get('inference-header-content-length'));
    const header = JSON.parse(buf.subarray(0, hl).toString());
    expect(header.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: [1] });
    const bin = buf.subarray(hl);
    expect(bin.readUInt32LE(0)).toBe(10);
    expect(bin.subarray(4).toString()).toBe('5.000000:4');
  });

  it("rejects unsupported datatypes with 400, and a bad K with Triton's JSON text (500)", async () => {
    const bad = await postJson(`${url}/v2/models/flags/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'BOOL', shape: [2], data: [true, false] }],
      outputs: [{ name: 'OUTPUT0', parameters: { classification: 1 } }],
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/unsupported type 'BOOL'/);
    const k = await postJson(`${url}/v2/models/flat/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [5], data: [1, 2, 3, 4, 5] }],
      outputs: [{ name: 'OUTPUT0', parameters: { classification: -1 } }],
    });
    expect(k.status).toBe(500);
    expect(k.json.error).toBe("Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer");
  });
});

describe('classifyTensor', () => {
  const f32 = (xs: number[]) => new Uint8Array(Float32Array.from(xs).buffer);
  const strings = (t: { data: Uint8Array }) => {
    const out: string[] = [];
    for (let o = 0; o < t.data.length;) {
      const n = Buffer.from(t.data.buffer, t.data.byteOffset).readUInt32LE(o);
      out.push(Buffer.from(t.data.subarray(o + 4, o + 4 + n)).toString());
      o += 4 + n;
    }
    return out;
  };
  it('formats 64-bit integers exactly and floats as %f', () => {
    const i64 = new Uint8Array(BigInt64Array.from([1n, 9007199254740993n, -2n]).buffer);
    expect(strings(classifyTensor({ name: 'o', datatype: 'INT64', shape: [3], data: i64 }, 2, undefined, false))).toEqual(['9007199254740993:1', '1:0']);
    expect(strings(classifyTensor({ name: 'o', datatype: 'FP32', shape: [1, 2], data: f32([0.1, -0.25]) }, 2, ['a', 'b'], true))).toEqual([
      '0.100000:0:a',
      '-0.250000:1:b',
    ]);
  });
});
