/**
 * Large payloads on the HTTP hot path (issue 14): the server-wide cap on JSON inference responses
 * (`--http-max-json-output-bytes`), checked from element counts before any JSON is built, with an
 * error that points the client to the binary data extension (spec §2).
 */
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../host/src/cli-options.js';
import { DEFAULT_HTTP_LIMITS } from '../../host/src/frontend/http/limits.js';
import { jsonTextMaxBytes, tensorDataToJsonText } from '../../host/src/tensor/json.js';
import { encodeBytesElements } from '../../host/src/tensor/bytes.js';
import type { DataType } from '../../host/src/tensor/datatypes.js';
import { perTestServers } from '../helpers/servers.js';
import { postJson, simpleRequest } from '../helpers/repo.js';

const IN0 = Array.from({ length: 16 }, (_, i) => i - 8);
const IN1 = Array.from({ length: 16 }, (_, i) => 2 * i);

describe('jsonTextMaxBytes: a bound, never below the real text', () => {
  const cases: [DataType, ArrayBufferView][] = [
    ['INT32', Int32Array.of(-2147483648, 2147483647, 0)],
    ['UINT32', Uint32Array.of(4294967295)],
    ['INT64', BigInt64Array.of(-9223372036854775808n, 9223372036854775807n)],
    ['UINT64', BigUint64Array.of(18446744073709551615n)],
    ['INT8', Int8Array.of(-128, 127)],
    ['INT16', Int16Array.of(-32768)],
    ['BOOL', Uint8Array.of(0, 1, 0)],
    ['FP32', Float32Array.of(-1.1754943508222875e-38, -3.4028234663852886e38, Number.NaN, -Infinity, 1 / 3, -0.0000012345678)],
    ['FP64', Float64Array.of(-2.2250738585072014e-308, -0.0000012345678901234567, -1.2345678901234567e21, Number.MIN_VALUE)],
    ['FP16', Uint16Array.of(0xfbff, 0x8001, 0x0001, 0x7c00)],
  ];
  for (const [dt, arr] of cases) {
    it(dt, () => {
      const data = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
      expect(jsonTextMaxBytes(data, dt)).toBeGreaterThanOrEqual(Buffer.byteLength(tensorDataToJsonText(data, dt)));
    });
  }
  it('BYTES (control characters, invalid UTF-8, quotes)', () => {
    const data = encodeBytesElements([Uint8Array.of(0, 1, 2, 0xff, 0xfe, 0x22, 0x5c), new Uint8Array(0), Uint8Array.of(0x1f)]);
    expect(jsonTextMaxBytes(data, 'BYTES')).toBeGreaterThanOrEqual(Buffer.byteLength(tensorDataToJsonText(data, 'BYTES')));
  });
});

describe('--http-max-json-output-bytes', () => {
  it('parses, defaults to 64 MiB and refuses nonsense', () => {
    expect(parseCli(['--model-repository=/m']).httpLimits!.maxJsonOutputBytes).toBe(DEFAULT_HTTP_LIMITS.maxJsonOutputBytes);
    expect(DEFAULT_HTTP_LIMITS.maxJsonOutputBytes).toBe(64 * 1024 * 1024);
    expect(parseCli(['--model-repository=/m', '--http-max-json-output-bytes=4096']).httpLimits!.maxJsonOutputBytes).toBe(4096);
    for (const bad of ['0', '-1', 'x']) {
      expect(() => parseCli(['--model-repository=/m', `--http-max-json-output-bytes=${bad}`]), bad).toThrow(UsageError);
    }
  });

  const { repository, serve } = perTestServers();
  // simple: two INT32 [1,16] outputs, each bounded at 2 + 16 × 12 = 194 bytes of JSON
  const limits = (maxJsonOutputBytes: number) => ({ ...DEFAULT_HTTP_LIMITS, maxJsonOutputBytes });

  it('a JSON response that could exceed the cap is a 400 pointing to the binary extension; binary outputs pass; the server keeps serving', async () => {
    const s = await serve(repository(), { loadModels: ['simple'], httpLimits: limits(300) });
    const url = `${s.httpUrl}/v2/models/simple/infer`;
    const tooBig = await postJson(url, simpleRequest('INT32', IN0, IN1));
    expect(tooBig.status).toBe(400);
    expect(tooBig.json.error).toMatch(/JSON response of model 'simple' could be up to 388 bytes, more than the server's limit of 300 bytes/);
    expect(tooBig.json.error).toMatch(/--http-max-json-output-bytes/);
    expect(tooBig.json.error).toMatch(/"binary_data": true/);
    expect(tooBig.json.error).not.toMatch(/\/tmp|\/work/);

    // one output binary: 194 bytes of JSON at most, under the cap
    const mixed = await postJson(url, simpleRequest('INT32', IN0, IN1, 1, { outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1', parameters: { binary_data: true } }] }));
    expect(mixed.status, mixed.text).toBe(200);
    expect(mixed.headers.get('inference-header-content-length')).not.toBeNull();

    const binary = await postJson(url, simpleRequest('INT32', IN0, IN1, 1, { parameters: { binary_data_output: true } }));
    expect(binary.status).toBe(200);

    // the refusal changed nothing: the model keeps answering
    const again = await postJson(url, simpleRequest('INT32', IN0, IN1, 1, { outputs: [{ name: 'OUTPUT0' }] }));
    expect(again.status, again.text).toBe(200);
    expect(again.json.outputs[0].data).toEqual(IN0.map((v, i) => v + IN1[i]!));
  });

  it('at the default cap the same JSON response is served', async () => {
    const s = await serve(repository(), { loadModels: ['simple'] });
    const r = await postJson(`${s.httpUrl}/v2/models/simple/infer`, simpleRequest('INT32', IN0, IN1));
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs.map((o: { name: string }) => o.name).sort()).toEqual(['OUTPUT0', 'OUTPUT1']);
  });
});
