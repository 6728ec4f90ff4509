/**
 * Large payloads on the HTTP hot path: the server-wide cap on JSON inference responses
 * (`--http-max-json-output-bytes`), checked from element counts before any JSON is built, with an
 * error that points the client to the binary data extension (spec §2); large JSON requests and
 * responses decoded / encoded on codec workers instead of the event loop.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { identityConfig, identityModel } from '../../../bench/onnx-model.js';
import { normalizeModelConfig, parseModelConfigPbtxt } from '../../../host/src/config/index.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import { CodecPool } from '../../../host/src/frontend/http/codec/pool.js';
import { BACKGROUND_NICE } from '../../../host/src/threads/priority.js';
import { decodeInferRequest } from '../../../host/src/frontend/http/infer-request.js';
import { encodeInferResponse } from '../../../host/src/frontend/http/infer-response.js';
import { parseCli, UsageError } from '../../../host/src/cli-options.js';
import { DEFAULT_HTTP_LIMITS } from '../../../host/src/frontend/http/limits.js';
import { jsonTextMaxBytes, tensorDataToJsonText } from '../../../host/src/tensor/json.js';
import { encodeBytesElements } from '../../../host/src/tensor/bytes.js';
import type { DataType } from '../../../host/src/contract/datatypes.js';
import { perTestServers } from '../../helpers/servers.js';
import { postJson, simpleRequest, tempRepo } from '../../helpers/repo.js';

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
    ['FP64', Float64Array.of(-2.2250738585072014e-308, -0.0000012345678901234567, -1.2345678901234568e21, Number.MIN_VALUE)],
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
    const repo = repository();
    const s = await serve(repo, { loadModels: ['simple'], httpLimits: limits(300) });
    const url = `${s.httpUrl}/v2/models/simple/infer`;
    const tooBig = await postJson(url, simpleRequest('INT32', IN0, IN1));
    expect(tooBig.status).toBe(400);
    expect(tooBig.json.error).toMatch(/JSON response of model 'simple' could be up to 388 bytes, more than the server's limit of 300 bytes/);
    expect(tooBig.json.error).toMatch(/--http-max-json-output-bytes/);
    expect(tooBig.json.error).toMatch(/"binary_data": true/);
    expect(tooBig.json.error).not.toContain(repo.path);

    // one output binary: 194 bytes of JSON at most, under the cap
    const mixed = await postJson(
      url,
      simpleRequest('INT32', IN0, IN1, 1, { outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1', parameters: { binary_data: true } }] }),
    );
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

describe('large JSON off the event loop (codec workers)', () => {
  const { serve } = perTestServers();

  it('the codec worker decodes and encodes exactly as the main thread does, errors included', async () => {
    const pool = new CodecPool(1);
    try {
      const cfg = normalizeModelConfig(parseModelConfigPbtxt(identityConfig('id')), { modelName: 'id', gpuCount: 0 });
      const body = Buffer.from(
        JSON.stringify({ id: 'x', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1.5, -2, 3e10] }], outputs: [{ name: 'OUTPUT0' }] }),
      );
      const here = decodeInferRequest(Buffer.from(body), undefined, 'id', 1, cfg);
      const there = await pool.decode(body, undefined, 'id', 1, cfg);
      expect(there.init.id).toBe('x');
      expect(Buffer.from(there.init.inputs[0]!.data)).toEqual(Buffer.from(here.init.inputs[0]!.data));
      expect(there.init.requestedOutputs).toEqual(['OUTPUT0']);

      const bad = Buffer.from('{"inputs": [}');
      const mainErr = (() => {
        try {
          decodeInferRequest(Buffer.from(bad), undefined, 'id', 1, cfg);
        } catch (e) {
          return e as TritonError;
        }
      })()!;
      await expect(pool.decode(bad, undefined, 'id', 1, cfg)).rejects.toMatchObject({ code: mainErr.code, message: mainErr.message });

      const response = { outputs: [{ name: 'OUTPUT0', datatype: 'FP32' as const, shape: [3], data: new Uint8Array(Float32Array.of(1, 2.5, -0).buffer) }] };
      const formats = { defaultBinary: false, perOutput: new Map<string, boolean>() };
      expect(await pool.encode('id', 1, 'x', response, formats, 1 << 20)).toEqual(encodeInferResponse('id', 1, 'x', response, formats, 1 << 20));
      await expect(pool.encode('id', 1, 'x', response, formats, 10)).rejects.toMatchObject({
        code: 'INVALID_ARG',
        message: expect.stringMatching(/binary_data/),
      });
    } finally {
      await pool.close();
    }
  });

  it('a 16 MB JSON request is parsed off the event loop, on a codec worker', async () => {
    const repo = tempRepo();
    repo.write('id/1/model.onnx', identityModel());
    repo.write('id/config.pbtxt', identityConfig('id'));
    try {
      const s = await serve(repo, { loadModels: ['id'] });
      const n = 3_000_000;
      const values = Array.from({ length: n }, (_, i) => (i % 1000) / 8);
      const text = JSON.stringify({
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [n], data: values }],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
      });
      expect(text.length).toBeGreaterThan(16_000_000);
      const body = Buffer.from(text);
      // The body goes to a codec worker (CodecPool.decode, which gives the bytes up to it): the
      // loop never runs the parse.
      const decode = CodecPool.prototype.decode;
      const decoded: [number, string][] = [];
      const spy = vi.spyOn(CodecPool.prototype, 'decode').mockImplementation(function (this: CodecPool, bytes, headerLength, model, version, config) {
        decoded.push([bytes.byteLength, model]);
        return decode.call(this, bytes, headerLength, model, version, config);
      });
      let res: Response;
      try {
        res = await fetch(`${s.httpUrl}/v2/models/id/infer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      } finally {
        spy.mockRestore();
      }
      const out = Buffer.from(await res.arrayBuffer());
      expect(res.status, out.subarray(0, 300).toString()).toBe(200);
      expect(decoded).toEqual([[body.byteLength, 'id']]);
      const jsonLen = Number(res.headers.get('inference-header-content-length'));
      const floats = new Float32Array(out.buffer.slice(out.byteOffset + jsonLen, out.byteOffset + out.byteLength));
      expect(floats.length).toBe(n);
      expect(floats[999]).toBe(999 / 8);
      expect(floats[n - 1]).toBe(((n - 1) % 1000) / 8);
    } finally {
      repo.cleanup();
    }
  }, 60_000);
});

/** Nice values of this process's threads (Linux /proc), by thread id. */
function threadNices(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const st = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      out.set(Number(tid), Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      /* the thread ended meanwhile */
    }
  }
  return out;
}

describe('codec worker priority', () => {
  it.skipIf(!existsSync('/proc/thread-self'))('codec workers run at a lower priority than the event loop (nice 10)', async () => {
    const pool = new CodecPool(1);
    try {
      const before = threadNices();
      const cfg = normalizeModelConfig(parseModelConfigPbtxt(identityConfig('id')), { modelName: 'id', gpuCount: 0 });
      await pool.decode(Buffer.from('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[1]}]}'), undefined, 'id', 1, cfg);
      const added = [...threadNices()].filter(([tid]) => !before.has(tid));
      expect(added.map(([, nice]) => nice)).toContain(BACKGROUND_NICE);
      expect(threadNices().get(process.pid)).toBe(before.get(process.pid));
    } finally {
      await pool.close();
    }
  });
});

describe('codec worker failure', () => {
  it('a codec worker that dies fails the job in flight with INTERNAL; the next job gets a new worker', async () => {
    const pool = new CodecPool(1);
    try {
      const cfg = normalizeModelConfig(parseModelConfigPbtxt(identityConfig('id')), { modelName: 'id', gpuCount: 0 });
      const body = () => Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] }));
      await pool.decode(body(), undefined, 'id', 1, cfg); // starts the worker
      const worker = (pool as unknown as { slots: { worker: import('node:worker_threads').Worker }[] }).slots[0]!.worker;
      const terminated = worker.terminate();
      const inFlight = pool.decode(body(), undefined, 'id', 1, cfg);
      await terminated;
      await expect(inFlight).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/HTTP codec worker exited/) });
      const again = await pool.decode(body(), undefined, 'id', 1, cfg);
      expect(Array.from(new Float32Array(again.init.inputs[0]!.data.buffer, again.init.inputs[0]!.data.byteOffset, 2))).toEqual([1, 2]);
    } finally {
      await pool.close();
    }
  });
});
