/**
 * Protocol details against a real server (spec §1.7–§1.13, §2): exact 64-bit JSON
 * integers on every backend kind (JS test backend, wasm sandbox, native Triton backend), raw BYTES
 * requests, output formats, duplicate names, JSON depth, chunked bodies, size limits, Content-Type,
 * response compression, health bodies, the repository index and server metadata.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { JsBackendResolver } from '../helpers/js-backend.js';
import { PROJECT_ROOT, getJson, postJson, tempRepo, type TempRepo } from '../helpers/repo.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;
const logLines: string[] = [];
const MAX_INPUT = 1 << 20;

const io = (type: string, dims = '[ -1 ]') =>
  `input [ { name: "INPUT0" data_type: ${type} dims: ${dims} } ]\noutput [ { name: "OUTPUT0" data_type: ${type} dims: ${dims} } ]`;

beforeAll(async () => {
  repo = tempRepo(['simple']);
  const model = (name: string, config: string) => {
    repo.write(`${name}/config.pbtxt`, config);
    mkdirSync(join(repo.path, name, '1'), { recursive: true });
  };
  model('echo_int64', `backend: "jstest"\nmax_batch_size: 0\n${io('TYPE_INT64')}`);
  model('echo_uint64', `backend: "jstest"\nmax_batch_size: 0\n${io('TYPE_UINT64')}`);
  model('echo_string', `backend: "jstest"\nmax_batch_size: 0\n${io('TYPE_STRING', '[ 1 ]')}`);
  model('echo_int32', `backend: "jstest"\nmax_batch_size: 0\n${io('TYPE_INT32')}`);
  model('echo_params', `backend: "jstest"\nmax_batch_size: 0\n${io('TYPE_INT32')}\nparameters { key: "mode" value: { string_value: "params" } }`);
  // The sandboxed and native identity samples, retyped to INT64.
  const samples = join(PROJECT_ROOT, 'model_repository');
  cpSync(join(samples, 'identity_wasm'), join(repo.path, 'identity_wasm'), { recursive: true });
  writeFileSync(
    join(repo.path, 'identity_wasm', 'config.pbtxt'),
    readFileSync(join(samples, 'identity_wasm', 'config.pbtxt'), 'utf8').replace(/TYPE_FP32/g, 'TYPE_INT64'),
  );
  model('identity_native', readFileSync(join(samples, 'identity_native', 'config.pbtxt'), 'utf8').replace(/TYPE_FP32/g, 'TYPE_INT64'));
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  });
  server = await startTestServer(repo, {
    loadModels: ['simple', 'echo_int64', 'echo_uint64', 'echo_string', 'echo_int32', 'echo_params', 'identity_wasm', 'identity_native'],
    maxInputSize: MAX_INPUT,
    logger: pino({ level: 'info' }, sink),
    backendResolvers: [new JsBackendResolver()],
  });
  url = server.httpUrl;
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    body: typeof body === 'string' ? body : new Uint8Array(body),
    headers: { 'content-type': 'application/json', ...headers },
  });

describe('64-bit integers in JSON are exact', () => {
  const I64 = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '-9007199254740993', '1', '0'];
  const U64 = ['18446744073709551615', '9223372036854775808', '9007199254740993', '0'];
  const body = (type: string, values: string[]) =>
    `{"inputs":[{"name":"INPUT0","datatype":"${type}","shape":[${values.length}],"data":[${values.join(',')}]}]}`;

  for (const model of ['echo_int64', 'identity_wasm', 'identity_native']) {
    it(`INT64 round trip through ${model}`, async () => {
      const res = await post(`/v2/models/${model}/infer`, body('INT64', I64));
      const text = await res.text();
      expect(res.status, text).toBe(200);
      expect(text).toContain(`"data":[${I64.join(',')}]`);
    });
  }

  it('UINT64 round trip, and binary output carries the exact bytes', async () => {
    const res = await post('/v2/models/echo_uint64/infer', body('UINT64', U64));
    expect(await res.text()).toContain(`"data":[${U64.join(',')}]`);
    const bin = await post(
      '/v2/models/echo_uint64/infer',
      `{"inputs":[{"name":"INPUT0","datatype":"UINT64","shape":[1],"data":[18446744073709551615]}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`,
    );
    const buf = Buffer.from(await bin.arrayBuffer());
    const n = Number(bin.headers.get('inference-header-content-length'));
    expect(buf.subarray(n).readBigUInt64LE(0)).toBe(18446744073709551615n);
  });

  it('out-of-range integers are refused as Triton refuses them (rapidjson AsInt/AsUInt)', async () => {
    const over = await post('/v2/models/echo_int64/infer', body('INT64', ['9223372036854775808']));
    expect(over.status).toBe(500);
    expect((await over.json()).error).toContain('non-signed-integer');
    const neg = await post('/v2/models/echo_uint64/infer', body('UINT64', ['-1']));
    expect(neg.status).toBe(500);
  });

  it('narrower integer types take the low bits of a big integer (C cast)', async () => {
    const res = await post('/v2/models/echo_int32/infer', body('INT32', ['4294967297']));
    expect(await res.text()).toContain('"data":[1]');
  });

  it('/generate keeps 64-bit integers exact both ways', async () => {
    const res = await post('/v2/models/echo_int64/generate', '{"INPUT0":[9223372036854775807,-9223372036854775808]}');
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain('"OUTPUT0":[9223372036854775807,-9223372036854775808]');
  });
});

describe('request bodies', () => {
  it("a raw binary BYTES request is the single element's bytes, without a length prefix", async () => {
    const res = await fetch(`${url}/v2/models/echo_string/infer`, { method: 'POST', body: 'hello raw', headers: { 'Inference-Header-Content-Length': '0' } });
    expect(res.status).toBe(200);
    const buf = Buffer.from(await res.arrayBuffer());
    const n = Number(res.headers.get('inference-header-content-length'));
    const header = JSON.parse(buf.subarray(0, n).toString());
    expect(header.outputs[0]).toEqual({ name: 'OUTPUT0', datatype: 'BYTES', shape: [1], parameters: { binary_data_size: 13 } });
    const out = buf.subarray(n);
    expect(out.readUInt32LE(0)).toBe(9);
    expect(out.subarray(4).toString()).toBe('hello raw');
  });

  // Triton http_server.cc CheckBinaryOutputData: a listed output is binary only with its own
  // binary_data: true; binary_data_output is the default of the outputs not listed.
  it('binary_data_output applies only to outputs not listed; a listed output without binary_data is JSON', async () => {
    const req = (outputs: unknown[]) =>
      JSON.stringify({
        parameters: { binary_data_output: true },
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
        ],
        outputs,
      });
    const res = await post('/v2/models/simple/infer', req([{ name: 'OUTPUT0', parameters: { binary_data: false } }, { name: 'OUTPUT1' }]));
    expect(res.status).toBe(200);
    expect(res.headers.get('inference-header-content-length')).toBeNull();
    const json = (await res.json()) as any;
    expect(json.outputs.map((o: any) => [o.name, o.data])).toEqual([
      ['OUTPUT0', Array(16).fill(3)],
      ['OUTPUT1', Array(16).fill(-1)],
    ]);
    // listed with binary_data: true: binary
    const mixed = await post('/v2/models/simple/infer', req([{ name: 'OUTPUT0', parameters: { binary_data: true } }]));
    const buf = Buffer.from(await mixed.arrayBuffer());
    const header = JSON.parse(buf.subarray(0, Number(mixed.headers.get('inference-header-content-length'))).toString());
    expect(header.outputs).toEqual([{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } }]);
  });

  it('a duplicate requested output is refused', async () => {
    const r = await postJson(`${url}/v2/models/echo_int32/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1] }],
      outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("output 'OUTPUT0' already exists in request");
  });

  it('duplicate input keys in a /generate body are refused (top level, or top level and parameters)', async () => {
    // tritonserver 2.51's texts, compared by hand with the wheel's binary.
    for (const [body, error] of [
      ['{"INPUT0":[1],"INPUT0":[2]}', "[request id: <id_unknown>] input 'INPUT0' already exists in request"],
      ['{"id":"g1","INPUT0":[1],"parameters":{"INPUT0":[2]}}', "Converting keyword: 'parameters': [request id: g1] input 'INPUT0' already exists in request"],
    ]) {
      const r = await postJson(`${url}/v2/models/echo_int32/generate`, body);
      expect(r.status, body).toBe(400);
      expect(r.json.error).toBe(error);
    }
  });

  it('JSON nested deeper than 100 levels is refused; 100 is accepted by the parser', async () => {
    const deep = (n: number) => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":${'['.repeat(n)}1${']'.repeat(n)}}]}`;
    const bad = await post('/v2/models/echo_int32/infer', deep(100));
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toBe('JSON nesting depth exceeds maximum allowed limit (100)');
    const ok = await post('/v2/models/echo_int32/infer', deep(96)); // 4 levels of object/array around data
    expect(ok.status).toBe(200);
    const gen = await post('/v2/models/echo_int32/generate', `{"x":${'['.repeat(200)}${']'.repeat(200)}}`);
    expect(gen.status).toBe(400);
    expect((await gen.json()).error).toBe('JSON nesting depth exceeds maximum allowed limit (100)');
  });

  it("bodies over --http-max-input-size get Triton's text (Content-Length, chunked and gzip)", async () => {
    const big = Buffer.alloc(MAX_INPUT + 10, 0x20);
    const text = `Request JSON size of ${MAX_INPUT + 10} bytes exceeds the maximum allowed value of ${MAX_INPUT} bytes. Use --http-max-input-size to increase the limit.`;
    const r1 = await post('/v2/models/echo_int32/infer', big);
    expect(r1.status).toBe(400);
    expect((await r1.json()).error).toBe(text);
    const chunked = await rawRequest('/v2/models/echo_int32/infer', [big.subarray(0, MAX_INPUT), big.subarray(MAX_INPUT)]);
    expect(chunked.status).toBe(400);
    expect(JSON.parse(chunked.body).error).toContain('exceeds the maximum allowed value of 1048576 bytes. Use --http-max-input-size to increase the limit.');
    const gz = await post('/v2/models/echo_int32/infer', gzipSync(big), { 'content-encoding': 'gzip' });
    expect(gz.status).toBe(400);
    expect((await gz.json()).error).toContain('exceeds the maximum allowed value of 1048576 bytes');
  });

  it('a chunked body of too many chunks is refused, and tiny chunks do not cost memory per chunk', async () => {
    const good = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[7]}]}';
    const ok = await rawRequest(
      '/v2/models/echo_int32/infer',
      [...good].map((c) => Buffer.from(c)),
    );
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).outputs[0].data).toEqual([7]);
    // Triton's cap and text (server http_server.cc kMaxChunkedChunks): 65,536 non-empty chunks pass,
    // one more is a 400 and the connection is closed
    const padded = (n: number) => [...good.padEnd(n, ' ')].map((c) => Buffer.from(c));
    const atCap = await rawRequest('/v2/models/echo_int32/infer', padded(65_536));
    expect(atCap.status).toBe(200);
    const many = await rawRequest('/v2/models/echo_int32/infer', padded(65_537));
    expect(many.status).toBe(400);
    expect(JSON.parse(many.body).error).toBe('Chunked request body exceeds maximum of 65536 non-empty chunks. Send fewer or larger HTTP chunks.');
    expect(many.headers.connection).toBe('close');
  }, 60_000);

  it('Transfer-Encoding: chunked with Content-Length (RFC 9112 §6.1): never read by its length, and the connection closes after the answer', async () => {
    const reply = await rawSocket('POST /v2/models/echo_int32/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    if (!server.dataPath) {
      // node:http refuses it (llhttp), with a JSON error body
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(reply).toMatch(/content-type: application\/json/i);
      expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toEqual({ error: "Transfer-Encoding can't be present with Content-Length" });
      return;
    }
    // the native data path (hyper) reads it by its Transfer-Encoding alone, as §6.1 allows: the
    // answer is the chunked request's, and the connection is closed after it (rawSocket resolves on close)
    const chunkedOnly = await rawSocket(
      'POST /v2/models/echo_int32/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
    );
    const status = (r: string) => r.slice(0, r.indexOf('\r\n'));
    expect(status(reply)).toBe(status(chunkedOnly));
    expect(reply.slice(reply.indexOf('\r\n\r\n'))).toBe(chunkedOnly.slice(chunkedOnly.indexOf('\r\n\r\n')));
    expect(reply).toMatch(/\r\nconnection: close\r\n/i);
  });

  it("a parameter of the wrong type gets Triton's text", async () => {
    const r = await postJson(`${url}/v2/models/echo_int32/infer`, {
      parameters: { p: [1] },
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1] }],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("parameter 'p' has invalid type. It should be either 'int', 'bool', or 'string'.");
  });
});

describe("malformed requests get Triton's texts (spec §1.2: http_server.cc ParseJsonTritonIO / ParseJsonTritonParams, triton_json.h)", () => {
  const input = (over: Record<string, unknown> = {}) => ({ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1], ...over });
  const infer = (body: unknown, model = 'echo_int32') => postJson(`${url}/v2/models/${model}/infer`, body);
  const cases: [string, unknown, number, string][] = [
    ['no inputs', { outputs: [] }, 500, "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"],
    ['inputs not an array', { inputs: {} }, 500, "Unable to parse 'inputs': attempt to access JSON non-array as array"],
    ['id not a string', { id: 5, inputs: [input()] }, 500, "Unable to parse 'id': attempt to access JSON non-string as string"],
    ['empty input name', { inputs: [input({ name: '' })] }, 400, "unexpected inference input '' for model 'echo_int32'"],
    ['empty output name', { inputs: [input()], outputs: [{ name: '' }] }, 400, "unexpected inference output '' for model 'echo_int32'"],
    [
      'input without a name',
      { inputs: [{ datatype: 'INT32', shape: [1], data: [1] }] },
      500,
      "Unable to parse 'name': attempt to access non-existing object member 'name'",
    ],
    [
      'input without data (checked before its name)',
      { inputs: [{ shape: [1] }] },
      400,
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
    ],
    [
      'input that is no object',
      { inputs: [7] },
      400,
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
    ],
    [
      'input with two data sources',
      { inputs: [input({ parameters: { binary_data_size: 4 } })] },
      400,
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' 'binary_data_size'",
    ],
    ['output name not a string', { inputs: [input()], outputs: [{ name: 7 }] }, 500, "Unable to parse 'name': attempt to access JSON non-string as string"],
    [
      'input without a datatype',
      { inputs: [{ name: 'INPUT0', shape: [1], data: [1] }] },
      500,
      "Unable to parse 'datatype': attempt to access non-existing object member 'datatype'",
    ],
    [
      'input without a shape',
      { inputs: [{ name: 'INPUT0', datatype: 'INT32', data: [1] }] },
      500,
      "Unable to parse 'shape': attempt to access non-existing object member 'shape'",
    ],
    ['shape not an array', { inputs: [input({ shape: 1 })] }, 500, "Unable to parse 'shape': attempt to access JSON non-array as array"],
    ['negative dim', { inputs: [input({ shape: [-1] })] }, 500, "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"],
    ['fractional dim', { inputs: [input({ shape: [1.5] })] }, 500, "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"],
    ['request parameters not an object', { parameters: [1], inputs: [input()] }, 500, 'failed to get request params.: attempt to get members for non-object'],
    [
      'sequence_start not a boolean',
      { parameters: { sequence_start: 1 }, inputs: [input()] },
      500,
      "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
    ],
    [
      'sequence_id neither unsigned nor string',
      { parameters: { sequence_id: -3 }, inputs: [input()] },
      500,
      "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
    ],
    [
      'priority not unsigned',
      { parameters: { priority: 'high' }, inputs: [input()] },
      500,
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      'timeout not unsigned',
      { parameters: { timeout: -1 }, inputs: [input()] },
      500,
      "Unable to parse 'timeout': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      'binary_data_output not a boolean',
      { parameters: { binary_data_output: 1 }, inputs: [input()] },
      500,
      "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean",
    ],
    [
      'reserved triton_ parameter',
      { parameters: { triton_x: 1 }, inputs: [input()] },
      400,
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
    ],
    [
      'binary_data not a boolean',
      { inputs: [input()], outputs: [{ name: 'OUTPUT0', parameters: { binary_data: 'yes' } }] },
      500,
      "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean",
    ],
    [
      'classification not unsigned',
      { inputs: [input()], outputs: [{ name: 'OUTPUT0', parameters: { classification: -2 } }] },
      500,
      "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      'binary_data_size not unsigned',
      { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], parameters: { binary_data_size: -4 } }] },
      500,
      "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
  ];
  for (const [what, body, status, error] of cases) {
    it(what, async () => {
      const r = await infer(body);
      expect(r.json, r.text).toEqual({ error });
      expect(r.status).toBe(status);
    });
  }

  it('dims beyond uint64 are a parse error; dims or byte sizes beyond 2^53 a shape overflow (no allocation)', async () => {
    const shape = (dims: string) => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[${dims}],"data":[1]}]}`;
    const beyond = await infer(shape('18446744073709551616'));
    expect(beyond.json.error).toBe("Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer");
    for (const dims of ['18446744073709551615', '9007199254740993', '4294967296,4294967296', '2251799813685248,4']) {
      const r = await infer(shape(dims));
      expect(r.status, dims).toBe(400);
      expect(r.json.error).toBe(`the shape [${dims}] of input 'INPUT0' is too large: its element count or byte size overflows`);
    }
  });

  it('input and output parameters that are no object are ignored, as Triton looks nothing up in them', async () => {
    const r = await infer({ inputs: [input({ parameters: 5 })], outputs: [{ name: 'OUTPUT0', parameters: 'x' }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([1]);
  });

  it('an error leaves the model serving (state untouched)', async () => {
    await infer({ parameters: { priority: 'high' }, inputs: [input()] });
    const ok = await infer({ inputs: [input({ data: [9] })] });
    expect(ok.status).toBe(200);
    expect(ok.json.outputs[0].data).toEqual([9]);
  });
});

describe('request parameters keep big integers exact', () => {
  it('int64 parameters beyond 2^53 reach the backend exactly; beyond int64 they are doubles', async () => {
    const body =
      '{"parameters":{"max":9223372036854775807,"min":-9223372036854775808,"odd":9007199254740993,"small":5,"beyond":18446744073709551615},' +
      '"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]}]}';
    const r = await post('/v2/models/echo_params/infer', body);
    const text = await r.text();
    expect(r.status, text).toBe(200);
    expect(text).toContain(
      '"parameters":{"max":9223372036854775807,"min":-9223372036854775808,"odd":9007199254740993,"small":5,"beyond":18446744073709552000}',
    );
  });
});

describe('duplicate keys in an /infer body: the first occurrence wins (rapidjson FindMember, as Triton)', () => {
  it('top-level, nested and parameters duplicates keep the first value', async () => {
    const r = await post(
      '/v2/models/echo_params/infer',
      '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[2],"data":[1,2],"data":[3,4]}],' +
        '"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[9]}],' +
        '"parameters":{"p":"first","p":"second","binary_data_output":false,"binary_data_output":true}}',
    );
    const text = await r.text();
    expect(r.status, text).toBe(200);
    const json = JSON.parse(text);
    expect(json.outputs[0].data).toEqual([1, 2]); // JSON output: binary_data_output's first value, false
    expect(json.parameters).toEqual({ p: 'first' });
  });

  it('also with 64-bit integers in the body (the exact parser), and for __proto__ keys', async () => {
    const r = await post(
      '/v2/models/echo_int64/infer',
      '{"__proto__":{"x":1},"inputs":[{"name":"INPUT0","datatype":"INT64","shape":[1],"data":[9223372036854775807]}],"inputs":[]}',
    );
    const text = await r.text();
    expect(r.status, text).toBe(200);
    expect(text).toContain('"data":[9223372036854775807]');
  });
});

describe('responses', () => {
  const infer = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[3],"data":[1,2,3]}]}';

  it('JSON replies are application/json exactly (no charset)', async () => {
    for (const res of [
      await post('/v2/models/echo_int32/infer', infer),
      await fetch(`${url}/v2`),
      await fetch(`${url}/v2/models/echo_int32`),
      await fetch(`${url}/v2/models/echo_int32/config`),
      await fetch(`${url}/v2/models/nope`),
      await post('/v2/models/echo_int32/generate', '{"INPUT0":[1]}'),
    ]) {
      expect(res.headers.get('content-type'), res.url).toBe('application/json');
    }
  });

  it('gzip and deflate per Accept-Encoding, with q-values and identity honoured', async () => {
    const plain = await (await post('/v2/models/echo_int32/infer', infer)).text();
    const get = (ae: string) =>
      new Promise<{ enc: string | undefined; body: Buffer }>((resolve, reject) => {
        const u = new URL(`${url}/v2/models/echo_int32/infer`);
        const req = httpRequest(
          { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'accept-encoding': ae, 'content-type': 'application/json' } },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (c) => parts.push(c));
            res.on('end', () => resolve({ enc: res.headers['content-encoding'], body: Buffer.concat(parts) }));
          },
        );
        req.on('error', reject);
        req.end(infer);
      });
    const gz = await get('gzip');
    expect(gz.enc).toBe('gzip');
    expect(gunzipSync(gz.body).toString()).toBe(plain);
    const df = await get('gzip;q=0.5, deflate;q=0.8');
    expect(df.enc).toBe('deflate');
    expect(inflateSync(df.body).toString()).toBe(plain);
    const id = await get('gzip;q=0.5, identity');
    expect(id.enc).toBeUndefined();
    expect(id.body.toString()).toBe(plain);
    const none = await get('gzip;q=0');
    expect(none.enc).toBeUndefined();
    const star = await get('*');
    expect(star.enc).toBe('gzip');
    // Binary replies: the header length stays the uncompressed JSON's.
    const u = new URL(`${url}/v2/models/echo_int32/infer`);
    const bin = await new Promise<{ headers: Record<string, any>; body: Buffer }>((resolve) => {
      const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'accept-encoding': 'gzip' } }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c) => parts.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(parts) }));
      });
      req.end('{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[5]}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}');
    });
    const raw = gunzipSync(bin.body);
    const n = Number(bin.headers['inference-header-content-length']);
    expect(JSON.parse(raw.subarray(0, n).toString()).outputs[0].parameters).toEqual({ binary_data_size: 4 });
    expect(raw.subarray(n).readInt32LE(0)).toBe(5);
  });

  it("health: Triton's status codes with the Open Inference Protocol's bodies", async () => {
    const live = await fetch(`${url}/v2/health/live`);
    expect(live.status).toBe(200);
    expect(live.headers.get('content-type')).toBe('application/json');
    expect(await live.json()).toEqual({ live: true });
    const ready = await fetch(`${url}/v2/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true });
  });

  it("GET /v2: tritonserver's default name and the extensions that are on, in Triton's order (client shm off here)", async () => {
    const meta = (await getJson(`${url}/v2`)).json;
    expect(meta.name).toBe('triton');
    expect(meta.extensions).toEqual([
      'classification',
      'sequence',
      'model_repository',
      'model_repository(unload_dependents)',
      'schedule_policy',
      'model_configuration',
      'binary_tensor_data',
      'parameters',
      'statistics',
      'trace',
      'logging',
      'generate',
      'sandboxed_backend(warden:backend@0.1.0)',
      'sandboxed_backend(warden:backend@0.1.1)',
    ]);
  });
});

describe('empty path segments', () => {
  it("are not Triton's paths: 404 Not Found (every capture of Triton's routes is [^/]+), whatever the method", async () => {
    for (const [method, path] of [
      ['POST', '/v2/models//infer'],
      ['GET', '/v2/models//ready'],
      ['GET', '/v2/models//versions/1/config'],
      ['GET', '/v2/models//trace/setting'],
      ['POST', '/v2/repository/models//load'],
      ['POST', '/v2/repository/models//unload'],
      ['POST', '/v2/repository//index'],
      ['GET', '/v2/systemsharedmemory/region//status'],
      ['PUT', '/v2/models//infer'],
    ]) {
      const r = await fetch(`${url}${path}`, { method, body: method === 'GET' ? undefined : '{}', headers: { 'content-type': 'application/json' } });
      expect([path, r.status, await r.text()]).toEqual([path, 404, '{"error":"Not Found"}']);
    }
  });
});

describe('repository', () => {
  it('failed loads and unloads of names that never existed leave no index entries; the failure is logged with its reason', async () => {
    const before = (await postJson(`${url}/v2/repository/index`, {})).json.map((e: any) => e.name);
    for (let i = 0; i < 5; i++) {
      // tritonserver's answer (test/backends/native/triton-differential.test.ts compares it).
      const l = await postJson(`${url}/v2/repository/models/bogus_${i}/load`, {});
      expect([l.status, l.json]).toEqual([500, { error: `failed to load 'bogus_${i}', failed to poll from model repository` }]);
      expect((await postJson(`${url}/v2/repository/models/ghost_${i}/unload`, {})).status).toBe(200);
    }
    const after = (await postJson(`${url}/v2/repository/index`, {})).json.map((e: any) => e.name);
    expect(after).toEqual(before);
    // Triton's log line (core model_repository_manager.cc Poll), at the error level (shown by default)
    const logged = logLines.map((l) => JSON.parse(l)).find((l) => l.model === 'bogus_0');
    expect(logged?.msg).toBe("failed to poll model 'bogus_0': model not found in any model repository.");
    expect(logged?.level).toBe(50);
    expect(logged?.reason).toBe("failed to load 'bogus_0', failed to poll from model repository");
  });
});

/** POST with a chunked body sent in the given pieces; the reply's status and body. */
function rawRequest(path: string, pieces: Buffer[]): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${url}${path}`);
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    let i = 0;
    const writeSome = () => {
      while (i < pieces.length) {
        if (!req.write(pieces[i++]!)) return void req.once('drain', writeSome);
      }
      req.end();
    };
    writeSome();
  });
}

/** Send raw bytes on a socket; everything the server answers until it closes (or 5 s). */
function rawSocket(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const s = connect(Number(u.port), u.hostname, () => s.write(text));
    let out = '';
    s.on('data', (d) => (out += d.toString()));
    s.on('close', () => resolve(out));
    s.on('error', reject);
    setTimeout(() => s.destroy(), 5000);
  });
}
