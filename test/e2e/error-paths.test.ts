/**
 * No outward error text shows an absolute host path, whatever directory it is under (DESIGN
 * "Sandbox rules"; docs/tenancy.md "Error texts"): a backend whose load and execute errors name
 * files outside every directory the server knows (`/srv/...`, `/etc/...`, `/opt/...`) is driven
 * through every way an error leaves — HTTP load answers, the repository index's `reason`, `/infer`
 * on Fastify, the fast path and a front-end thread, `/generate`, `/generate_stream`, gRPC
 * ModelInfer, ModelStreamInfer and RepositoryModelLoad — and no answer may carry the path.
 */
import { status, Metadata, type ServiceError } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { internal } from '../../host/src/contract/errors.js';
import { redactAbsolutePaths, PathScrubber } from '../../host/src/contract/public-errors.js';
import { HTTP_FRONT_ENDS, serverPerSuite } from '../helpers/servers.js';
import { unaryCall } from '../helpers/grpc.js';
import { postJson, tempRepo } from '../helpers/repo.js';
import { executeBackend, resolverOf } from '../helpers/js-backend.js';

/** Paths outside the model repositories, upload store, caches, temp dir, home and installation. */
const SECRET_FILE = '/srv/warden-secret/weights/model.bin';
const SECRET_DIR = '/opt/operator-keys/';
const LEAKS = [SECRET_FILE, '/srv/warden-secret', '/etc/shadow', '/opt/operator-keys', 'warden-secret/weights', 'operator-keys'];

/** `backend: "leaky"`: load fails when parameter `fail_load` is set; every execute fails; both errors name host files. */
const leaky = () =>
  resolverOf(
    executeBackend(
      'leaky',
      async (requests, senders) => {
        for (const s of senders.slice(0, requests.length)) s.sendError(internal(`failed to read ${SECRET_FILE}: permission denied; see /etc/shadow`), true);
      },
      (ctx) => {
        if (ctx.config.parameters.fail_load)
          throw new Error(`ENOENT: no such file or directory, open '${SECRET_FILE}' (also tried /etc/shadow and "${SECRET_DIR}k 1")`);
      },
    ),
  );

const config = (name: string, extra = '') => `
name: "${name}"
backend: "leaky"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
${extra}
`;

function expectNoPath(text: string, what: string): void {
  expect(text.length, what).toBeGreaterThan(0);
  for (const leak of LEAKS) expect(text, what).not.toContain(leak);
}

describe('redactAbsolutePaths', () => {
  it('removes any absolute path of two or more components, quoted or bare, and keeps everything else', () => {
    expect(redactAbsolutePaths("open '/etc/shadow' failed")).toBe("open '<path>' failed");
    expect(redactAbsolutePaths('read /srv/a/b.bin: EACCES')).toBe('read <path>: EACCES');
    expect(redactAbsolutePaths('"/home/x/my models/m.onnx" missing')).toBe('"<path>" missing');
    expect(redactAbsolutePaths('at (/usr/lib/node/x.js:12:5)')).toBe('at (<path>:12:5)');
    expect(redactAbsolutePaths('path=/var/run/x,next')).toBe('path=<path>,next');
    expect(redactAbsolutePaths('bad escape \\/srv/secret/x in string')).toBe('bad escape \\<path> in string');
    // not paths: relative files, labels, URLs, MIME types, shm keys (one component), ratios
    for (const keep of [
      "model 'm' file 1/model.wasm",
      '<uploads>/acme/m/1/model.wasm',
      'fetch https://issuer.example/jwks.json failed',
      'content-type application/json',
      "region '/acme_region' not found",
      'shape [1]/[2], 3/4 done, ./local/file',
    ]) {
      expect(redactAbsolutePaths(keep)).toBe(keep);
    }
  });

  it('the scrubber relabels its known roots first, then redacts whatever absolute path is left', () => {
    const s = new PathScrubber([{ path: '/data/models', label: '' }]);
    expect(s.scrub("load '/data/models/m/1/model.onnx' from /mnt/elsewhere/m.onnx")).toBe("load 'm/1/model.onnx' from <path>");
    expect(s.publicError(internal('x /etc/passwd y')).message).toBe('x <path> y');
  });
});

describe.each(HTTP_FRONT_ENDS)('errors leave without host paths (%s)', (_label, httpOpts) => {
  const suite = serverPerSuite(async () => {
    const repo = tempRepo();
    repo.addModel('leaky', config('leaky'));
    repo.addModel('broken', config('broken', 'parameters { key: "fail_load" value: { string_value: "yes" } }'));
    return { repo, opts: { loadModels: ['leaky'], grpcPort: 0, backendResolvers: [leaky()], ...httpOpts } };
  });

  it('HTTP: load answer, index reason, /infer, /generate, /generate_stream', async () => {
    const url = suite.server.httpUrl;
    const load = await postJson(`${url}/v2/repository/models/broken/load`, {});
    expect(load.status).toBeGreaterThanOrEqual(400);
    expect(load.json.error).toMatch(/ENOENT: no such file or directory/);
    expectNoPath(load.text, 'load');
    const index = await postJson(`${url}/v2/repository/index`, {});
    const reason = index.json.find((e: { name: string }) => e.name === 'broken').reason as string;
    expect(reason).toMatch(/ENOENT/);
    expectNoPath(reason, 'index reason');
    const infer = await postJson(`${url}/v2/models/leaky/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }] });
    expect(infer.status).toBe(500);
    expect(infer.json.error).toMatch(/permission denied/);
    expectNoPath(infer.text, 'infer');
    const generate = await postJson(`${url}/v2/models/leaky/generate`, { INPUT0: [1] });
    expect(generate.status).toBe(500);
    expectNoPath(generate.text, 'generate');
    const stream = await postJson(`${url}/v2/models/leaky/generate_stream`, { INPUT0: [1] });
    // a first response that is an error is still an event stream, with the error's status
    // (Triton http_server.cc GenerateRequestClass::InferResponseComplete / AddErrorJson)
    expect(stream.status).toBe(500);
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.text).toMatch(/^data: \{"error":"[^\n]*permission denied[^\n]*"\}\n\n$/);
    expectNoPath(stream.text, 'generate_stream');
  });

  it('gRPC: ModelInfer, RepositoryModelLoad, ModelStreamInfer (both error styles)', async () => {
    const req = {
      model_name: 'leaky',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1] }],
      raw_input_contents: [Buffer.from(Float32Array.of(1).buffer)],
    };
    const infer = await unaryCall(suite.client, 'ModelInfer', req);
    expect(infer.err?.code).toBe(status.INTERNAL);
    expectNoPath(infer.err!.details, 'ModelInfer');
    const load = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'broken' });
    expect(load.err?.details).toMatch(/ENOENT/);
    expectNoPath(load.err!.details, 'RepositoryModelLoad');
    for (const grpcErrors of [false, true]) {
      const md = new Metadata();
      if (grpcErrors) md.set('triton_grpc_error', 'true');
      const s = (
        suite.client as unknown as { ModelStreamInfer(md: Metadata): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }
      ).ModelStreamInfer(md);
      const got: { error_message?: string }[] = [];
      s.on('data', (m) => got.push(m));
      const err = await new Promise<ServiceError | undefined>((resolve) => {
        s.on('error', (e: ServiceError) => resolve(e));
        s.on('end', () => resolve(undefined));
        s.write(req);
        s.end();
      });
      const text = grpcErrors ? (err?.details ?? '') : got.map((m) => m.error_message ?? '').join('\n');
      expect(text, `stream grpcErrors=${grpcErrors}`).toMatch(/permission denied/);
      expectNoPath(text, `stream grpcErrors=${grpcErrors}`);
    }
  });
});
