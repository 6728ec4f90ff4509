/**
 * Density through the load API (`BENCH_ONLY=density`; DESIGN "Multi-tenancy": many tenants'
 * models per host): one Warden with its DEFAULT settings (multi-tenant, the default tenant quotas,
 * the default sandbox memory budget and idle policy; only `--model-control-mode=explicit`, which
 * the load API needs, and a private upload directory) takes BENCH_DENSITY_UPLOADS (default 1000)
 * uploads of `identity_wasm` (Triton's load API: config + base64 `file:1/model.wasm`, the same
 * component bytes every time, a new model name each) from BENCH_DENSITY_TENANTS tenants (default:
 * as many as the default `max_models` needs), one after another, on each engine of
 * BENCH_DENSITY_ENGINES (default `v8,wasmtime`; `--wasm-engine`). After a tenant's first upload,
 * every other upload names the component by digest instead (Warden's `file_sha256:1/model.wasm`).
 * Reported per engine: uploads accepted, upload latency (the first upload, of a component the
 * server has not seen; the other tenants' first uploads, p50; p50 / p90 of uploads sending bytes
 * the tenant holds, and of uploads by digest), the server's RSS and threads before, after the uploads, and after the idle
 * policy released the sandboxes (BENCH_DENSITY_IDLE_WAIT_S, default 35 s after the last upload),
 * RSS per model, bytes on disk of the upload directory (each inode once), and the first-request
 * latency of a released model (p50 / p90 over 20 models).
 */
import { createHash } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashToken } from '../host/src/tenancy/token.js';
import { DEFAULT_TENANT_QUOTAS } from '../host/src/tenancy/types.js';
import type { BenchContext } from './ctx.js';
import { IDENTITY_INPUT, identityRequest } from './requests.js';

const MiB = 1024 * 1024;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;
const token = (t: number) => `bench-density-tenant-${t}-0123456789abcdefghijklmnop`;

/** VmRSS (bytes) and threads of a process, from /proc. */
function procStatus(pid: number): { rss: number; threads: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? NaN);
  return { rss: kb * 1024, threads: Number(/Threads:\s+(\d+)/.exec(s)?.[1] ?? NaN) };
}

/** Bytes of the regular files under `dir`, each inode once (hard links share theirs). */
function diskBytes(dir: string): number {
  const seen = new Set<number>();
  let total = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile() && !seen.has(st.ino)) {
        seen.add(st.ino);
        total += st.size;
      }
    }
  };
  walk(dir);
  return total;
}

interface EngineRow {
  engine: string;
  accepted: number;
  refused: string[];
  firstUploadMs: number;
  /** Each other tenant's first upload (bytes the server holds for another tenant: the same work as new ones). */
  tenantFirstP50Ms: number;
  /** Uploads of bytes the tenant holds, sent again. */
  uploadP50Ms: number;
  uploadP90Ms: number;
  /** Uploads naming bytes the tenant holds by digest (`file_sha256:`). */
  byDigestP50Ms: number;
  byDigestP90Ms: number;
  rssBeforeMiB: number;
  rssAfterUploadsMiB: number;
  rssReleasedMiB: number;
  rssPerModelMiB: number;
  threadsBefore: number;
  threadsAfterUploads: number;
  threadsReleased: number;
  diskMiB: number;
  firstRequestP50Ms: number;
  firstRequestP90Ms: number;
}

async function runEngine(ctx: BenchContext, engine: string, n: number, tenants: number, idleWaitS: number): Promise<EngineRow> {
  const repo = await ctx.makeRepository([]);
  const dir = mkdtempSync(join(tmpdir(), 'warden-bench-density-'));
  const uploads = join(dir, 'uploads');
  const tenantsFile = join(dir, 'tenants.json');
  writeFileSync(
    tenantsFile,
    JSON.stringify({ tenants: Array.from({ length: tenants }, (_, t) => ({ id: `t${t}`, role: 'tenant', tokens: [hashToken(token(t))] })) }),
  );
  const server = await ctx.startWarden(repo, [
    `--tenants=${tenantsFile}`,
    '--model-control-mode=explicit',
    `--upload-directory=${uploads}`,
    `--wasm-engine=${engine}`,
  ]);
  try {
    const pid = server.pid!;
    const wasm = readFileSync(join(ctx.root, 'model_repository', 'identity_wasm', '1', 'model.wasm'));
    const b64 = wasm.toString('base64');
    const config = (name: string) => ({
      name,
      backend: 'wasm',
      max_batch_size: 0,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      instance_group: [{ kind: 'KIND_CPU', count: 1 }],
    });
    const headers = (t: number) => ({ 'content-type': 'application/json', authorization: `Bearer ${token(t)}` });
    const digest = createHash('sha256').update(wasm).digest('hex');
    const before = procStatus(pid);
    const times: number[] = [];
    const tenantFirst: number[] = [];
    const byDigest: number[] = [];
    const refused: string[] = [];
    const names: [number, string][] = [];
    for (let i = 0; i < n; i++) {
      const t = i % tenants;
      const name = `m${i}`;
      // a tenant's first upload sends the bytes; after it, every other upload names them by digest
      const digestUpload = i >= tenants && i % 2 === 1;
      const file = digestUpload ? { 'file_sha256:1/model.wasm': digest } : { 'file:1/model.wasm': b64 };
      const body = JSON.stringify({ parameters: { config: JSON.stringify(config(name)), ...file } });
      const t0 = performance.now();
      const res = await fetch(`${server.url}/v2/repository/models/${name}/load`, { method: 'POST', headers: headers(t), body });
      const text = await res.text();
      const ms = performance.now() - t0;
      if (digestUpload) byDigest.push(ms);
      else if (i > 0 && i < tenants) tenantFirst.push(ms);
      else times.push(ms);
      if (res.status === 200) names.push([t, name]);
      else if (refused.length < 5) refused.push(`#${i}: ${res.status} ${text.slice(0, 200)}`);
      else refused.push('');
    }
    const afterUploads = procStatus(pid);
    const disk = diskBytes(uploads);
    // the idle policy releases every sandbox (default 30 s after its last use)
    await new Promise((r) => setTimeout(r, idleWaitS * 1000));
    const released = procStatus(pid);
    const req = identityRequest('x');
    const first: number[] = [];
    for (const [t, name] of names.filter((_, k) => k % Math.max(1, Math.floor(names.length / 20)) === 0).slice(0, 20)) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/v2/models/${name}/infer`, { method: 'POST', headers: headers(t), body: req.body as string });
      const out = (await res.json()) as { outputs?: { data: number[] }[] };
      first.push(performance.now() - t0);
      if (res.status !== 200 || JSON.stringify(out.outputs?.[0]?.data) !== JSON.stringify(IDENTITY_INPUT))
        throw new Error(`${name} answered ${res.status}: ${JSON.stringify(out).slice(0, 300)}`);
    }
    const known = times.slice(1);
    return {
      engine,
      accepted: names.length,
      refused: refused.filter(Boolean),
      firstUploadMs: times[0] ?? NaN,
      tenantFirstP50Ms: pct(tenantFirst, 50),
      uploadP50Ms: pct(known, 50),
      uploadP90Ms: pct(known, 90),
      byDigestP50Ms: pct(byDigest, 50),
      byDigestP90Ms: pct(byDigest, 90),
      rssBeforeMiB: before.rss / MiB,
      rssAfterUploadsMiB: afterUploads.rss / MiB,
      rssReleasedMiB: released.rss / MiB,
      rssPerModelMiB: (released.rss - before.rss) / MiB / Math.max(1, names.length),
      threadsBefore: before.threads,
      threadsAfterUploads: afterUploads.threads,
      threadsReleased: released.threads,
      diskMiB: disk / MiB,
      firstRequestP50Ms: pct(first, 50),
      firstRequestP90Ms: pct(first, 90),
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The density suite (see the module comment). */
export async function benchDensity(ctx: BenchContext): Promise<EngineRow[]> {
  const n = Number(process.env.BENCH_DENSITY_UPLOADS ?? 1000);
  const tenants = Number(process.env.BENCH_DENSITY_TENANTS ?? Math.ceil(n / DEFAULT_TENANT_QUOTAS.max_models));
  const idleWaitS = Number(process.env.BENCH_DENSITY_IDLE_WAIT_S ?? 35);
  const engines = (process.env.BENCH_DENSITY_ENGINES ?? 'v8,wasmtime').split(',').filter(Boolean);
  ctx.log(`\n== Density through the load API: ${n} uploads of identity_wasm from ${tenants} tenants, default settings ==`);
  const rows: EngineRow[] = [];
  for (const engine of engines) {
    const row = await runEngine(ctx, engine, n, tenants, idleWaitS);
    ctx.log(JSON.stringify(row));
    rows.push(row);
  }
  const f = (x: number, d = 1) => x.toFixed(d);
  ctx.section(
    `Density through the load API (${n} uploads of identity_wasm, ${tenants} tenants, default settings)`,
    ctx.table(
      [
        'engine',
        'accepted',
        'first upload ms',
        "a tenant's first upload p50 ms",
        'upload of held bytes p50 / p90 ms',
        'upload by digest p50 / p90 ms',
        'RSS before / after uploads / released MiB',
        'RSS per model MiB',
        'threads before / after / released',
        'disk MiB',
        'first request of a released model p50 / p90 ms',
      ],
      rows.map((r) => [
        r.engine,
        `${r.accepted}/${n}`,
        f(r.firstUploadMs),
        f(r.tenantFirstP50Ms),
        `${f(r.uploadP50Ms)} / ${f(r.uploadP90Ms)}`,
        `${f(r.byDigestP50Ms)} / ${f(r.byDigestP90Ms)}`,
        `${f(r.rssBeforeMiB, 0)} / ${f(r.rssAfterUploadsMiB, 0)} / ${f(r.rssReleasedMiB, 0)}`,
        f(r.rssPerModelMiB, 2),
        `${r.threadsBefore} / ${r.threadsAfterUploads} / ${r.threadsReleased}`,
        f(r.diskMiB),
        `${f(r.firstRequestP50Ms)} / ${f(r.firstRequestP90Ms)}`,
      ]),
    ) + (rows.some((r) => r.refused.length) ? `\n\nrefused: ${rows.flatMap((r) => r.refused.map((x) => `${r.engine} ${x}`)).join('; ')}` : ''),
  );
  return rows;
}
