// Triton's own Python backend (libtriton_python.so from the pinned nvidia-pytriton wheel,
// test/backends/native/triton-wheel.ts) in a backend-host process (warden.isolation=process). The backend
// names one POSIX shared memory region per stub `<shm-region-prefix-name><uuid>` (python_backend
// stub_launcher.cc); the backend removes it when it cleans a stub up, and a stub that sees its
// parent gone removes it on its way out (pb_stub.cc, "Non-graceful termination"). When the
// backend-host process and its stubs die together (killed as a tree, the OOM killer taking both),
// nobody does. Warden gives each backend-host process a prefix of its own (the configured or
// default prefix, then a random token) and removes that process's regions once it is gone — only
// those.
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { childProcesses } from '../../helpers/processes.js';
import { requireNativeBuild, startNativeServer } from './helpers.js';
import { ensureTritonWheel, type TritonWheel } from './triton-wheel.js';

const MODELS = join(import.meta.dirname, 'triton-python-models');
/** python_be.cc's default prefix for the backend named `python`. */
const DEFAULT_PREFIX = 'triton_python_backend_shm_region_';
const ISOLATED = '\nparameters { key: "warden.isolation" value { string_value: "process" } }\n';

let wheel: TritonWheel = { ok: false, reason: 'not prepared' };
let repo: TempRepo;
let server: RunningServer | undefined;

function skipUnlessWheel(ctx: { skip: (note?: string) => void }): void {
  if (!wheel.ok) ctx.skip(`Triton's Python backend wheel unavailable: ${wheel.reason}`);
}

/** Live backend-host processes started by this process. */
const hostProcesses = () => childProcesses(/isolation\/child\.(ts|js)/);

/** The live children of `pid` (the Python backend's stubs of a backend-host process). */
const childrenOf = (pid: number) => childProcesses(undefined, pid);

/** The Python backend's regions a process has mapped (names in /dev/shm). */
function pythonRegions(pid: number): string[] {
  const names = new Set<string>();
  for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const m = /\/dev\/shm\/(triton_python_backend_shm_region_\S+?)( \(deleted\))?$/.exec(line);
    if (m) names.add(m[1]!);
  }
  return [...names];
}

const addSub = {
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
    { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 1, 1, 1] },
  ],
};
const ready = async (model: string) => (await fetch(`${server!.httpUrl}/v2/models/${model}/ready`)).status === 200;
/** Names under the default prefix and Warden's token marker that exist now. */
const wardenRegionsNow = () => readdirSync('/dev/shm').filter((n) => n.startsWith(`${DEFAULT_PREFIX}warden`));

beforeAll(async () => {
  requireNativeBuild();
  wheel = await ensureTritonWheel();
  if (!wheel.ok) return;
  repo = tempRepo();
  cpSync(join(MODELS, 'tp_add_sub'), join(repo.path, 'tp_iso'), { recursive: true });
  writeFileSync(join(repo.path, 'tp_iso', 'config.pbtxt'), readFileSync(join(MODELS, 'tp_add_sub', 'config.pbtxt'), 'utf8') + ISOLATED);
  // initialize() raises: a start that fails in the stub.
  repo.write('tp_iso_fail/config.pbtxt', readFileSync(join(MODELS, 'tp_add_sub', 'config.pbtxt'), 'utf8') + ISOLATED);
  repo.write(
    'tp_iso_fail/1/model.py',
    'class TritonPythonModel:\n    def initialize(self, args):\n        raise RuntimeError("tp_iso_fail: initialize refused")\n\n    def execute(self, requests):\n        return []\n',
  );
  server = await startNativeServer(repo.path, { backendDirectory: wheel.wardenBackends, loadModels: ['tp_iso'], exitTimeoutSecs: 10 });
}, 15 * 60_000);

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
}, 60_000);

describe("Triton's Python backend in a backend-host process: its shared memory regions", () => {
  it('kill -9 of the backend-host process and its stubs together: the regions it created are removed, the model serves again', async (ctx) => {
    skipUnlessWheel(ctx);
    const url = server!.httpUrl;
    expect((await postJson(`${url}/v2/models/tp_iso/infer`, addSub)).status).toBe(200);
    const [host] = hostProcesses();
    expect(host).toBeDefined();
    const regions = pythonRegions(host!);
    expect(regions.length).toBeGreaterThan(0);
    for (const r of regions) expect(existsSync(join('/dev/shm', r))).toBe(true);
    const stubs = childrenOf(host!);
    expect(stubs.length).toBeGreaterThan(0);
    // The whole tree at once: no stub is left to notice its parent is gone and clean up.
    for (const p of stubs) process.kill(p, 'SIGKILL');
    process.kill(host!, 'SIGKILL');
    await expect.poll(() => hostProcesses().filter((p) => p !== host).length, { timeout: 30_000 }).toBe(1);
    await expect.poll(() => ready('tp_iso'), { timeout: 120_000, interval: 200 }).toBe(true);
    const again = await postJson(`${url}/v2/models/tp_iso/infer`, addSub);
    expect(again.status, again.text).toBe(200);
    expect(again.json.outputs[0].data).toEqual([2, 3, 4, 5]);
    for (const r of regions) expect(existsSync(join('/dev/shm', r)), r).toBe(false);
    // The new process has regions of its own, under another token.
    const fresh = pythonRegions(hostProcesses()[0]!);
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.some((r) => regions.includes(r))).toBe(false);
    // Each process's own prefix: the default one, then Warden's token.
    for (const r of [...regions, ...fresh]) expect(r).toMatch(/^triton_python_backend_shm_region_warden[0-9a-f]{24}_/);
  }, 180_000);

  it('a start that fails in the stub (initialize raises) leaves no region and no process', async (ctx) => {
    skipUnlessWheel(ctx);
    const before = new Set(wardenRegionsNow());
    const hosts = hostProcesses();
    const r = await postJson(`${server!.httpUrl}/v2/repository/models/tp_iso_fail/load`, {});
    expect(r.status).not.toBe(200);
    expect(r.json.error).toMatch(/tp_iso_fail: initialize refused/);
    await expect.poll(() => hostProcesses().filter((p) => !hosts.includes(p)), { timeout: 15_000 }).toEqual([]);
    expect(wardenRegionsNow().filter((n) => !before.has(n))).toEqual([]);
  }, 120_000);

  it('unload: the process ends and its regions are gone', async (ctx) => {
    skipUnlessWheel(ctx);
    const [host] = hostProcesses();
    const regions = pythonRegions(host!);
    expect((await postJson(`${server!.httpUrl}/v2/repository/models/tp_iso/unload`, {})).status).toBe(200);
    await expect.poll(() => hostProcesses(), { timeout: 30_000 }).toEqual([]);
    await expect.poll(() => regions.filter((r) => existsSync(join('/dev/shm', r))), { timeout: 10_000 }).toEqual([]);
  }, 120_000);
});
