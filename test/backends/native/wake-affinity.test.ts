// Wake affinity (native/src/core/wake.cc): a native or wasmtime instance thread woken while the
// process is otherwise idle is first moved onto the waking thread's CPU, and takes the process's
// whole CPU mask back as soon as it runs; the JS thread that placed it stays on that CPU until the
// answer comes back. What must hold: placement happens on the request path of
// in-process native models, wasmtime sandboxes and backend-host processes (the parent places the
// child's ring reader); it never leaves a thread pinned; threads whose jobs take long are not
// placed; `--wake-affinity=false` turns it off; and the parent places only a thread that belongs
// to its child.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { tempRepo, type TempRepo } from '../../helpers/repo.js';
import { nativeAddon } from '../../../host/src/platform/addon.js';
import { PROJECT_ROOT, copyRepoModel, faultsModel, requireNativeBuild, startNativeServer } from './helpers.js';

const INPUT = [1.5, -2, 3.25, 0];
const C_IDENTITY = join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm');

/** Allowed CPUs of every thread of process `pid`, by thread id. */
function threadMasks(pid: number | 'self'): Map<string, string> {
  const out = new Map<string, string>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const m = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'));
      if (m) out.set(tid, m[1]!);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/** The allowed CPUs of this process's main thread before any placement (the tests' reference). */
const HOME = threadMasks('self').get(String(process.pid))!;

/** Threads of `pid` (the JS thread included) whose mask is not the process's whole mask: none once placement is done. */
function pinnedThreads(pid: number | 'self'): string[] {
  return [...threadMasks(pid)].filter(([, m]) => m !== HOME).map(([tid, m]) => `${tid}:${m}`);
}

async function infer(url: string, model: string): Promise<void> {
  const res = await fetch(`${url}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [INPUT.length], data: INPUT }] }),
  });
  const body = (await res.json()) as { outputs?: { data: number[] }[]; error?: string };
  expect(res.status, body.error).toBe(200);
  expect(body.outputs![0]!.data).toEqual(INPUT);
}

/** Placements made in this process while `n` sequential requests go to `model`. */
async function placementsDuring(url: string, model: string, n: number): Promise<number> {
  const addon = nativeAddon();
  const before = addon.wakeAffinityPlacements();
  for (let i = 0; i < n; i++) await infer(url, model);
  return addon.wakeAffinityPlacements() - before;
}

/**
 * Sends sequential requests to `model` until `want` placements happened (at most 100 requests):
 * on an idle machine every request is placed, but a loaded one (CI runs test files side by side)
 * can stretch a job past the 100 µs average that stops placement for a while.
 */
async function expectPlacements(url: string, model: string, want: number): Promise<void> {
  const addon = nativeAddon();
  const before = addon.wakeAffinityPlacements();
  let sent = 0;
  while (addon.wakeAffinityPlacements() - before < want && sent < 100) {
    await infer(url, model);
    sent++;
  }
  expect(addon.wakeAffinityPlacements() - before, `placements in ${sent} requests to ${model}`).toBeGreaterThanOrEqual(want);
}

describe('wake affinity', () => {
  let repo: TempRepo;
  let server: RunningServer;

  beforeAll(async () => {
    requireNativeBuild();
    repo = tempRepo();
    copyRepoModel(repo, 'identity_native');
    // the same backend in a backend-host process
    const iso = join(repo.path, 'identity_iso');
    mkdirSync(join(iso, '1'), { recursive: true });
    writeFileSync(
      join(iso, 'config.pbtxt'),
      readFileSync(join(repo.path, 'identity_native', 'config.pbtxt'), 'utf8').replace(/name: "identity_native"/, 'name: "identity_iso"') +
        '\nparameters { key: "warden.isolation" value: { string_value: "process" } }\n',
    );
    // a C guest on the wasmtime engine
    const wasm = join(repo.path, 'identity_wt');
    mkdirSync(join(wasm, '1'), { recursive: true });
    copyFileSync(C_IDENTITY, join(wasm, '1', 'model.wasm'));
    writeFileSync(
      join(wasm, 'config.pbtxt'),
      readFileSync(join(PROJECT_ROOT, 'model_repository', 'identity_wasm', 'config.pbtxt'), 'utf8').replace('name: "identity_wasm"', 'name: "identity_wt"') +
        '\nparameters { key: "engine" value: { string_value: "wasmtime" } }\n',
    );
    faultsModel(repo, 'slow', { mode: 'hang', hang_ms: '1' });
    server = await startNativeServer(repo.path, { wakeAffinity: true });
    for (const m of ['identity_native', 'identity_iso', 'identity_wt']) await infer(server.httpUrl, m); // warm
  }, 120_000);

  afterAll(async () => {
    nativeAddon().setWakeAffinity(true);
    await server?.stop();
    repo?.cleanup();
  });

  it.each(['identity_native', 'identity_wt', 'identity_iso'])(
    '%s: sequential requests place the sleeping thread, and no thread stays pinned',
    async (model) => {
      await expectPlacements(server.httpUrl, model, 5);
      // the instance threads and the JS thread (unpinned when each answer arrived)
      expect(pinnedThreads('self')).toEqual([]);
    },
  );

  it('the backend-host process: its ring reader and every other thread have the whole mask back after requests', async () => {
    await placementsDuring(server.httpUrl, 'identity_iso', 10);
    const children = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    expect(children.length).toBeGreaterThan(0);
    for (const pid of children) expect(pinnedThreads(pid)).toEqual([]);
  });

  it('a model whose executes take long (1 ms, over the 100 µs limit) is not placed once its average says so', async () => {
    // Samples are capped at 400 µs and weigh 1/8: the average is 0, 50, 94, then 132 µs, so the
    // first three executes may be placed and none after (without the limit: all twelve).
    const addon = nativeAddon();
    const before = addon.wakeAffinityPlacements();
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${server.httpUrl}/v2/models/slow/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [7] }] }),
      });
      expect(res.status).toBe(200);
    }
    expect(addon.wakeAffinityPlacements() - before).toBeLessThanOrEqual(3);
    // a short model in the same process is still placed
    await expectPlacements(server.httpUrl, 'identity_native', 3);
  });

  it('off (--wake-affinity=false): requests place nothing, and still succeed', async () => {
    nativeAddon().setWakeAffinity(false);
    try {
      for (const m of ['identity_native', 'identity_wt', 'identity_iso']) expect(await placementsDuring(server.httpUrl, m, 5)).toBe(0);
    } finally {
      nativeAddon().setWakeAffinity(true);
    }
    await expectPlacements(server.httpUrl, 'identity_native', 1);
  });

  it('a thread id that is not asleep in this process cannot be placed: bad ids are refused', () => {
    const addon = nativeAddon();
    const before = addon.wakeAffinityPlacements();
    expect(addon.wakeAffinityPlace(0)).toBe(false);
    expect(addon.wakeAffinityPlace(-1)).toBe(false);
    expect(addon.wakeAffinityPlace(0x7ffffff0)).toBe(false); // no such thread
    expect(addon.wakeAffinityPlacements()).toBe(before);
    expect(() => (addon as unknown as { wakeAffinityPlace(x: unknown): boolean }).wakeAffinityPlace('1')).toThrow(TypeError);
  });

  it('the parent records only a ring-reader id that is a thread of its own child', async () => {
    const { BackendHostProcess } = await import('../../../host/src/backends/native/isolation/host-process.js');
    const proc = new BackendHostProcess(() => undefined, (await import('pino')).pino({ level: 'silent' }));
    try {
      const internals = proc as unknown as { readerTid: number };
      proc.setReaderTid(process.pid); // a thread of the parent, not of the child
      proc.setReaderTid(1);
      proc.setReaderTid('12' as unknown as number);
      proc.setReaderTid(2.5);
      expect(internals.readerTid).toBe(0);
      proc.setReaderTid(proc.pid!); // the child's main thread is one of its threads
      expect(internals.readerTid).toBe(proc.pid);
    } finally {
      await proc.kill();
    }
  });
});
