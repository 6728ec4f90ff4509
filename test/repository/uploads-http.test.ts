/**
 * The load API's file overrides (spec §3.1) over HTTP, as the upload store keeps them: uploads land
 * in the upload directory (default `<first repository>/.warden-uploads`, never the shared OS temp
 * directory), the operator namespace's are removed at unload and do not outlive the server, names
 * from the URL or the `file:` keys that are not plain names are refused before anything is written,
 * and error messages carry no host paths.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { perTestServers } from '../helpers/servers.js';
import { ADDSUB_CONFIG, addsubModelBase64, parseJsonOrUndefined, postJson, type TempRepo } from '../helpers/repo.js';
import { sleep, until } from '../helpers/wait.js';

const { repository, serve, defer } = perTestServers();

const CONFIG = JSON.stringify(ADDSUB_CONFIG);
const MODEL = addsubModelBase64();
const upload = (extra: Record<string, string> = {}) => ({ parameters: { config: CONFIG, 'file:1/model.onnx': MODEL, ...extra } });

const infer = (url: string, model: string) =>
  postJson(`${url}/v2/models/${model}/infer`, {
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', datatype: 'FP32', shape: [16], data: Array.from({ length: 16 }, () => 1) },
    ],
  });

/** POST with the path exactly as given (fetch would resolve `%2e%2e` segments). */
function rawPost(url: string, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += String(d)));
      res.on('end', () => {
        resolve({ status: res.statusCode!, json: parseJsonOrUndefined(text) });
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const warden = (repo: TempRepo) => join(repo.path, '.warden-uploads');
const sharedOverrides = () => {
  const d = join(tmpdir(), 'warden-overrides');
  return existsSync(d) ? readdirSync(d) : [];
};

describe('uploads over HTTP', () => {
  it('land in <repository>/.warden-uploads, not in the OS temp directory; removed at unload and not restored', async () => {
    const repo = repository();
    const tmpBefore = sharedOverrides();
    let s = await serve(repo);
    const ok = await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload());
    expect(ok.status, ok.text).toBe(200);
    expect((await infer(s.httpUrl, 'up')).json.outputs[0].data).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(readdirSync(join(warden(repo), '.operator/up'))).toEqual(['g1']);
    expect(sharedOverrides()).toEqual(tmpBefore);
    // The store is not a model of the repository.
    const index = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json as { name: string }[];
    expect(index.map((e) => e.name)).toEqual(['simple', 'up']);
    // A reload with new files replaces the generation; the old one goes once retired.
    expect((await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload({ 'file:labels.txt': 'YQ==' }))).status).toBe(200);
    await until(() => readdirSync(join(warden(repo), '.operator/up')).join() === 'g2', { within: 2000, what: 'the old generation retired' });
    expect(readdirSync(join(warden(repo), '.operator/up'))).toEqual(['g2']);
    expect((await postJson(`${s.httpUrl}/v2/repository/models/up/unload`, {})).status).toBe(200);
    await until(() => !existsSync(join(warden(repo), '.operator/up')), { within: 2000, what: 'the store emptied' });
    expect(existsSync(join(warden(repo), '.operator/up'))).toBe(false);
    // Uploaded again, then the server stops: a new server does not serve it.
    expect((await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload())).status).toBe(200);
    await s.stop();
    s = await serve(repo);
    expect((await infer(s.httpUrl, 'up')).status).toBe(404);
    expect(existsSync(join(warden(repo), '.operator'))).toBe(false);
  });

  it('--upload-directory puts the store elsewhere', async () => {
    const repo = repository();
    const dir = mkdtempSync(join(tmpdir(), 'warden-upload-dir-'));
    defer(() => rmSync(dir, { recursive: true, force: true }));
    const s = await serve(repo, { uploadDirectory: join(dir, 'store') });
    expect((await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload())).status).toBe(200);
    expect(readdirSync(join(dir, 'store', '.operator'))).toEqual(['up']);
    expect(existsSync(warden(repo))).toBe(false);
  });

  it('model names and file paths that are not plain names are refused before anything is written', async () => {
    const repo = repository();
    const s = await serve(repo);
    const before = readdirSync(repo.path);
    for (const model of ['%2e%2e', '.', '%2E', '..%2F..%2Fescape', 'a%5Cb', 'a%00b']) {
      const r = await rawPost(s.httpUrl, `/v2/repository/models/${model}/load`, upload());
      expect(r.status, model).toBe(400);
      expect(r.json.error, model).toMatch(/invalid model name/);
    }
    // A model name is at most 255 bytes (checked by the data plane, before the store).
    expect((await rawPost(s.httpUrl, `/v2/repository/models/${'x'.repeat(256)}/load`, upload())).status).toBe(400);
    for (const key of [
      'file:../x',
      'file:1/../../x',
      'file:/etc/x',
      'file:1\\..\\x',
      'file:1/./model.onnx',
      'file:1//model.onnx',
      'file:1/',
      'file:1/a\u0000',
    ]) {
      const r = await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload({ [key]: 'YQ==' }));
      expect(r.status, key).toBe(400);
      expect(r.json.error, key).toMatch(/invalid file override path/);
    }
    expect(readdirSync(repo.path)).toEqual(before);
    expect(existsSync(warden(repo))).toBe(false);
  });

  it('a failed upload reports no host paths and leaves nothing behind', async () => {
    const repo = repository();
    const s = await serve(repo);
    const bad = await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload({ 'file:1/model.onnx': Buffer.from('not onnx').toString('base64') }));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/up\/1\/model\.onnx/);
    const missing = await postJson(`${s.httpUrl}/v2/repository/models/up2/load`, { parameters: { config: CONFIG, 'file:1/other.bin': 'YQ==' } });
    expect(missing.status).toBe(400);
    const index = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json as { name: string; reason?: string }[];
    const messages = [bad.json.error, missing.json.error, ...index.map((e) => e.reason ?? '')];
    for (const m of messages) {
      expect(m).not.toContain(repo.path);
      expect(m).not.toContain('.warden-uploads');
      expect(m).not.toContain(tmpdir());
    }
    expect(readdirSync(join(warden(repo), '.operator'))).toEqual([]);
    expect(readdirSync(join(warden(repo), '.staging'))).toEqual([]);
  });

  it('poll mode never takes the store for a model', async () => {
    const repo = repository();
    let s = await serve(repo);
    expect((await postJson(`${s.httpUrl}/v2/repository/models/up/load`, upload())).status).toBe(200);
    await s.stop();
    s = await serve(repo, { modelControlMode: 'poll', repositoryPollSecs: 1 });
    await sleep(1200);
    const index = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json as { name: string }[];
    expect(index.map((e) => e.name)).toEqual(['simple']);
    expect((await fetch(`${s.httpUrl}/v2/health/ready`)).status).toBe(200);
  });
});
