/**
 * Surrogate escapes in request JSON over HTTP, on every way a body reaches the parser
 * (frontend/http/json-text.ts): Fastify's `/infer` route and the `/infer` fast path, a body large
 * enough to be decoded on the codec worker, `/generate`, and front-end threads (`--http-threads`,
 * main listener off). tritonserver 2.51 answers an unpaired `\uD800`–`\uDBFF` escape with 500
 * `failed to parse the request JSON buffer: The surrogate pair in string is invalid. at <offset of
 * the escape>` (rapidjson's words), and takes a lone `\uDC00`–`\uDFFF` escape as its 3-byte form:
 * a BYTES element "\udc00" reaches the model as ED B0 80 (test/frontend/http/json-text.test.ts has
 * the parser's cases; test/backends/native/triton-differential.test.ts compares with tritonserver itself).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OFFLOAD_BYTES } from '../../../host/src/frontend/http/codec/pool.js';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { JsBackendResolver } from '../../helpers/js-backend.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';

const BYTES_ECHO = `
backend: "jstest"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
`;

const SURROGATE = (offset: number) => ({ error: `failed to parse the request JSON buffer: The surrogate pair in string is invalid. at ${offset}` });

let repo: TempRepo;
const servers: Record<string, RunningServer> = {};

beforeAll(async () => {
  repo = tempRepo([]);
  repo.addModel('bytes_echo', BYTES_ECHO);
  const base = { modelControlMode: 'none' as const, backendResolvers: [new JsBackendResolver()] };
  [servers.single, servers.threads] = await Promise.all([
    startTestServer(repo, base),
    startTestServer(repo, { ...base, httpThreads: 1, httpMainListener: false }),
  ]);
});
afterAll(async () => {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  repo?.cleanup();
});

/** A BYTES request whose body is `prefix` + the data array text, padded with spaces to at least `pad` bytes. */
function body(data: string, pad = 0, extra = ''): string {
  const b = `{${extra}"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1],"data":[${data}]}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`;
  return b + ' '.repeat(Math.max(0, pad - b.length));
}
/** The byte offset of the data array's first character (its first string's opening quote). */
const OFFSET = body('@').indexOf('@');

describe.each(['single', 'threads'])('server %s', (which) => {
  const url = () => `${servers[which]!.httpUrl}/v2/models/bytes_echo`;

  it.each([
    ['an unpaired high surrogate', '"\\ud800"'],
    ['a high surrogate before a non-surrogate escape', '"\\ud800\\u0041"'],
    ['two high surrogates', '"\\uD800\\uDBFF"'],
  ])("/infer: %s is 500 with rapidjson's text and offset, small and offloaded bodies", async (_what, data) => {
    for (const pad of [0, OFFLOAD_BYTES + 1024]) {
      const r = await postJson(`${url()}/infer`, body(data, pad));
      expect({ pad, status: r.status, json: r.json }).toEqual({ pad, status: 500, json: SURROGATE(OFFSET + 1) });
    }
  });

  it('/generate: the same refusal (its parser reports duplicate keys, another path)', async () => {
    const r = await postJson(`${url()}/generate`, '{"INPUT0":["\\udbff x"]}');
    expect({ status: r.status, json: r.json }).toEqual({ status: 500, json: SURROGATE(12) });
  });

  it('/infer: a lone low surrogate reaches the model as ED B0 80, a pair as its UTF-8 (binary output)', async () => {
    for (const pad of [0, OFFLOAD_BYTES + 1024]) {
      const res = await fetch(`${url()}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body('"\\udc00","a\\ud83d\\ude00"', pad).replace('"shape":[1]', '"shape":[2]'),
      });
      expect(res.status).toBe(200);
      const raw = Buffer.from(await res.arrayBuffer());
      const headerLength = Number(res.headers.get('inference-header-content-length'));
      // Two elements: [3]ED B0 80, [5]61 F0 9F 98 80.
      expect(raw.subarray(headerLength).toString('hex')).toBe('03000000edb080' + '0500000061f09f9880');
    }
  });
});
