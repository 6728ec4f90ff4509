/**
 * Uploads by digest (Warden's extension of the load API, spec §3.1; docs/tenancy.md "Uploads by
 * digest"): `"file_sha256:<version>/<path>": "<hex>"` names a file the caller's own namespace
 * already holds instead of sending it. Attack cases first: another tenant's digest is refused
 * exactly like an unknown one (no cross-tenant side channel), a malformed digest, a path that
 * leaves the model directory, a path sent both ways, a digest whose blob was deleted; then the
 * accepted case over HTTP and gRPC, with the quota counting the file's size and the audit line
 * marking the file. The shared upload store is covered in shared-uploads.test.ts.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { unaryCall } from '../helpers/grpc.js';
import { postJson, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { until } from '../helpers/wait.js';

const TOKENS = testTokens('acme', 'bob', 'small');
type Who = keyof typeof TOKENS;

let wasm: Buffer;
let digest: string;
const audit: Record<string, any>[] = [];

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  wasm = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm'));
  digest = createHash('sha256').update(wasm).digest('hex');
  const lines = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.includes('"audit":true')) audit.push(JSON.parse(l));
      done();
    },
  });
  const tenants = [
    { id: 'acme', token: TOKENS.acme },
    { id: 'bob', token: TOKENS.bob },
    // holds the component once, but may not send it twice in one load
    { id: 'small', token: TOKENS.small, quotas: { max_upload_bytes: wasm.length + 4096 } },
  ];
  return { repo: tempRepo([]), tenants, opts: { grpcPort: 0, separateUploads: true, logger: pino({ level: 'info' }, lines) } };
}, 120_000);

const CONFIG = JSON.stringify({
  backend: 'wasm',
  input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
});
const auth = (who: Who) => ({ authorization: `Bearer ${TOKENS[who]}` });
const load = (who: Who, model: string, files: Record<string, unknown>) =>
  postJson(`${suite.server.httpUrl}/v2/repository/models/${model}/load`, { parameters: { config: CONFIG, ...files } }, auth(who));
const byBytes = () => ({ 'file:1/model.wasm': wasm.toString('base64') });
const byDigest = (hex = digest, path = '1/model.wasm') => ({ [`file_sha256:${path}`]: hex });
const infer = (who: Who, model: string) =>
  postJson(`${suite.server.httpUrl}/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [3, 4] }] }, auth(who));
/** The refusal's text with the digest it names replaced, to compare two refusals. */
const shape = (text: string, hex: string) => text.split(hex).join('<digest>');
const blobs = () => readdirSync(join(suite.tenancy.dir, 'uploads', '.blobs', 'sha256'));

describe('uploads by digest: refusals', () => {
  it("tenant B naming tenant A's digest is refused exactly like a digest nobody holds (NOT_FOUND, same text)", async () => {
    expect((await load('acme', 'a1', byBytes())).status).toBe(200);
    const theirs = await load('bob', 'b1', byDigest());
    const nobody = createHash('sha256').update('bytes nobody uploaded').digest('hex');
    const unknown = await load('bob', 'b1', byDigest(nobody));
    expect(theirs.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(shape(theirs.json.error, digest)).toBe(shape(unknown.json.error, nobody));
    expect(theirs.json.error).toMatch(
      /failed to load 'b1': no stored file of this namespace has SHA-256 [0-9a-f]{64} \("1\/model.wasm"\); send its bytes as 'file:' instead/,
    );
    // and nothing was loaded or stored for bob
    expect((await infer('bob', 'b1')).status).not.toBe(200);
    expect(readdirSync(join(suite.tenancy.dir, 'uploads'))).not.toContain('bob');
  });

  it('a malformed digest is INVALID_ARG', async () => {
    for (const bad of [digest.slice(1), `${digest}0`, `${digest.slice(1)}g`, '', `sha256:${digest}`, 42, null]) {
      const r = await load('acme', 'a2', byDigest(bad as string));
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.json.error).toMatch(/file digest for "1\/model.wasm" must be its SHA-256 as 64 hexadecimal digits/);
    }
  });

  it('a path leaving the model directory is INVALID_ARG, as for file:', async () => {
    for (const path of ['../../model.wasm', '1/../../x', '/etc/passwd', '1//model.wasm', '1\\model.wasm']) {
      const r = await load('acme', 'a2', byDigest(digest, path));
      expect(r.status, path).toBe(400);
      expect(r.json.error).toMatch(/invalid file override path/);
    }
  });

  it('a path sent both as bytes and by digest is INVALID_ARG', async () => {
    const r = await load('acme', 'a2', { ...byBytes(), ...byDigest() });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/is given both as bytes \('file:'\) and by digest \('file_sha256:'\)/);
  });

  it("a digest whose blob was deleted (the tenant's last model using it deleted) is NOT_FOUND", async () => {
    const gone = Buffer.concat([wasm, Buffer.from('custom section? no: trailing bytes the check refuses')]);
    const hex = createHash('sha256').update(gone).digest('hex');
    // a refused upload stores nothing: the digest is unknown afterwards
    expect((await load('acme', 'g1', { 'file:1/model.wasm': gone.toString('base64') })).status).toBe(400);
    expect((await load('acme', 'g1', byDigest(hex))).status).toBe(404);
    // a deleted model's blob goes with it
    expect((await load('acme', 'g2', { ...byBytes(), 'file:1/extra.bin': Buffer.from('only g2').toString('base64') })).status).toBe(200);
    const extra = createHash('sha256').update('only g2').digest('hex');
    expect((await load('acme', 'g3', { ...byDigest(), ...byDigest(extra, '1/extra.bin') })).status).toBe(200);
    for (const m of ['g2', 'g3']) {
      const r = await postJson(`${suite.server.httpUrl}/v2/repository/models/${m}/unload`, { parameters: { delete_files: true } }, auth('acme'));
      expect(r.status).toBe(200);
    }
    // the files go once the unloaded versions have drained
    await until(() => !blobs().includes(extra), { what: "the deleted models' blob is removed" });
    const r = await load('acme', 'g4', { ...byDigest(), ...byDigest(extra, '1/extra.bin') });
    expect(r.status).toBe(404);
    expect(r.json.error).toContain(extra);
  });
});

describe('uploads by digest: accepted', () => {
  it('HTTP: a digest the tenant holds loads the same bytes (one blob on disk), checked and audited as if sent', async () => {
    expect((await load('acme', 'd0', byBytes())).status).toBe(200);
    audit.length = 0;
    const r = await load('acme', 'd1', byDigest(digest.toUpperCase()));
    expect(r.status, r.text).toBe(200);
    expect((await infer('acme', 'd1')).json.outputs[0].data).toEqual([3, 4]);
    expect(blobs()).toContain(digest);
    expect(statSync(join(suite.tenancy.dir, 'uploads', '.blobs', 'sha256', digest)).nlink).toBeGreaterThan(2);
    const line = audit.find((l) => l.event === 'load' && l.model === 'd1');
    expect(line).toMatchObject({ tenant: 'acme', outcome: 'ok', files: [{ path: '1/model.wasm', sha256: digest, bytes: wasm.length, by_digest: true }] });
  });

  it('gRPC RepositoryModelLoad: file_sha256 as a string_param; refused for another tenant like an unknown digest', async () => {
    const params = (hex: string) => ({ config: { string_param: CONFIG }, 'file_sha256:1/model.wasm': { string_param: hex } });
    const ok = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'grpc1', parameters: params(digest) }, TOKENS.acme);
    expect(ok.err).toBeUndefined();
    expect((await infer('acme', 'grpc1')).status).toBe(200);
    const theirs = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'grpc1', parameters: params(digest) }, TOKENS.bob);
    expect(theirs.err?.code).toBe(5); // NOT_FOUND
    const wrongKind = await unaryCall(
      suite.client,
      'RepositoryModelLoad',
      { model_name: 'grpc2', parameters: { 'file_sha256:1/model.wasm': { bytes_param: Buffer.from(digest) } } },
      TOKENS.acme,
    );
    expect(wrongKind.err?.code).toBe(3); // INVALID_ARGUMENT
  });

  it('max_upload_bytes counts a file named by digest at its size, as if it was sent', async () => {
    expect((await load('small', 's1', byBytes())).status).toBe(200);
    expect((await load('small', 's2', byDigest())).status).toBe(200);
    const twice = await load('small', 's3', { ...byDigest(), ...byDigest(digest, '1/copy.wasm') });
    expect(twice.status).toBe(403);
    expect(twice.json.error).toMatch(new RegExp(`${wasm.length * 2}`));
  });
});
