// Clean-up and readiness of isolated native models (warden.isolation=process; the server removes
// what it created, and only that). Each backend-host process maps two
// ring regions the server created in /dev/shm (`warden-<server pid>-<n>-<random>`); their names
// must be gone once the process has them mapped — after a crash and restart, while a start hangs
// in the backend's initialize, and after a start that fails — and a process still starting when
// its model is unloaded is stopped. Readiness of isolated instances is Triton's
// (TRITONBACKEND_ModelInstanceReady asked by the readiness endpoints only, never gating requests).
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { childProcesses } from '../../helpers/processes.js';
import { TEST_BACKEND_DIR, faultsModel, requireNativeBuild, startNativeServer } from './helpers.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;
let gate: string;

/** Ring names this server (this process) created that still exist. */
const ringNames = () => readdirSync('/dev/shm').filter((n) => n.startsWith(`warden-${process.pid}-`));

/** Live backend-host processes started by this process. */
const hostProcesses = () => childProcesses(/isolation\/child\.(ts|js)/);

/** The ring regions a process has mapped, `{ path, deleted }` (the kernel marks unlinked files " (deleted)"). */
function mappedRings(pid: number): { path: string; deleted: boolean }[] {
  const seen = new Map<string, boolean>();
  for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const m = /(\/dev\/shm\/warden-\d+-\S+)( \(deleted\))?$/.exec(line);
    if (m) seen.set(m[1]!, m[2] !== undefined);
  }
  return [...seen].map(([path, deleted]) => ({ path, deleted }));
}

/** The backend-host process serving `model` (it mapped the backend library copied into the model's directory). */
function hostOf(model: string): number {
  const pid = hostProcesses().find((p) => readFileSync(`/proc/${p}/maps`, 'utf8').includes(`/${model}/libtriton_`));
  if (pid === undefined) throw new Error(`no backend-host process serves '${model}'`);
  return pid;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
const infer = (model: string, v: number[]) =>
  postJson(`${url}/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [v.length], data: v }] });
const ready = async (model: string) => (await fetch(`${url}/v2/models/${model}/ready`)).status === 200;

/** Wait for a backend-host process not in `before`. */
async function newHost(before: number[]): Promise<number> {
  let pid: number | undefined;
  await expect
    .poll(
      () => {
        pid = hostProcesses().find((p) => !before.includes(p));
        return pid !== undefined;
      },
      { timeout: 30_000, interval: 50 },
    )
    .toBe(true);
  return pid!;
}

/**
 * Wait (bounded) until `pid` has both rings mapped and no ring name of this server exists: what
 * the process sees once its rings are set up, whatever its backend does after that.
 */
async function ringsMappedAndUnlinked(pid: number): Promise<void> {
  await expect
    .poll(() => ({ names: ringNames(), mapped: mappedRings(pid).filter((r) => r.deleted).length }), { timeout: 15_000, interval: 50 })
    .toEqual({ names: [], mapped: 2 });
}

beforeAll(async () => {
  requireNativeBuild();
  repo = tempRepo();
  gate = join(repo.path, 'gate');
  faultsModel(repo, 'iso', { 'warden.isolation': 'process' });
  faultsModel(repo, 'iso_gated', { 'warden.isolation': 'process', init_gate: gate });
  faultsModel(repo, 'iso_restart', { 'warden.isolation': 'process', init_gate: gate });
  faultsModel(repo, 'iso_fail_instance', { 'warden.isolation': 'process', mode: 'fail_init' });
  faultsModel(repo, 'iso_not_ready', { 'warden.isolation': 'process', mode: 'not_ready' }, 2);
  // TRITONBACKEND_Initialize fails in the backend-host process.
  repo.write(
    'iso_init_fail/config.pbtxt',
    `backend: "warden_test_init_fail"\nmax_batch_size: 0\ninput { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }\noutput { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }\nparameters { key: "warden.isolation" value { string_value: "process" } }`,
  );
  mkdirSync(join(repo.path, 'iso_init_fail', '1'), { recursive: true });
  cpSync(
    join(TEST_BACKEND_DIR, 'warden_test_init_fail', 'libtriton_warden_test_init_fail.so'),
    join(repo.path, 'iso_init_fail', 'libtriton_warden_test_init_fail.so'),
  );
  server = await startNativeServer(repo.path, { loadModels: ['iso', 'iso_restart', 'iso_not_ready'], exitTimeoutSecs: 5 });
  url = server.httpUrl;
}, 60_000);

afterAll(async () => {
  rmSync(gate, { force: true });
  await server?.stop();
  repo?.cleanup();
});

describe('isolation rings are removed', () => {
  it('a loaded isolated model: its process has both rings mapped, no ring name is left', async () => {
    expect((await infer('iso', [1, 2])).status).toBe(200);
    const hosts = hostProcesses();
    expect(hosts.length).toBe(3);
    for (const p of hosts) expect(mappedRings(p)).toEqual([expect.objectContaining({ deleted: true }), expect.objectContaining({ deleted: true })]);
    expect(ringNames()).toEqual([]);
  });

  it('kill -9 of the backend-host process: after the restart neither its rings nor the new ones are left', async () => {
    const before = hostProcesses();
    const killed = hostOf('iso');
    const rings = mappedRings(killed).map((r) => r.path);
    process.kill(killed, 'SIGKILL');
    await expect.poll(() => alive(killed), { timeout: 10_000 }).toBe(false);
    const fresh = await newHost(before);
    await expect.poll(() => ready('iso'), { timeout: 30_000, interval: 50 }).toBe(true);
    expect((await infer('iso', [4])).json.outputs[0].data).toEqual([4]);
    for (const r of rings) expect(existsSync(r)).toBe(false);
    expect(mappedRings(fresh).every((r) => r.deleted)).toBe(true);
    expect(ringNames()).toEqual([]);
  });

  it('a start that hangs in TRITONBACKEND_ModelInitialize: the process has its rings mapped and no ring name is left while it hangs', async () => {
    writeFileSync(gate, '');
    const before = hostProcesses();
    const load = postJson(`${url}/v2/repository/models/iso_gated/load`, {});
    try {
      await ringsMappedAndUnlinked(await newHost(before));
    } finally {
      rmSync(gate, { force: true });
    }
    expect((await load).status).toBe(200);
    expect((await infer('iso_gated', [5])).status).toBe(200);
    expect(ringNames()).toEqual([]);
  });

  for (const [model, why] of [
    ['iso_init_fail', /TRITONBACKEND_Initialize refused to start/],
    ['iso_fail_instance', /./],
  ] as const) {
    it(`a start that fails (${model}): no ring name and no backend-host process is left`, async () => {
      const before = hostProcesses();
      const r = await postJson(`${url}/v2/repository/models/${model}/load`, {});
      expect(r.status).not.toBe(200);
      expect(r.json.error).toMatch(why);
      await expect.poll(() => hostProcesses().filter((p) => !before.includes(p)), { timeout: 10_000 }).toEqual([]);
      expect(ringNames()).toEqual([]);
    });
  }

  it('unloaded while its restart hangs in the backend: the starting process is stopped and nothing is left', async () => {
    expect((await infer('iso_restart', [6])).status).toBe(200);
    const before = hostProcesses();
    const own = hostOf('iso_restart');
    writeFileSync(gate, '');
    try {
      process.kill(own, 'SIGKILL');
      const restarting = await newHost(before); // blocked in ModelInitialize behind the gate
      await ringsMappedAndUnlinked(restarting);
      expect((await postJson(`${url}/v2/repository/models/iso_restart/unload`, {})).status).toBe(200);
      await expect.poll(() => alive(restarting), { timeout: 15_000, interval: 50 }).toBe(false);
      expect(ringNames()).toEqual([]);
    } finally {
      rmSync(gate, { force: true });
    }
  });
});

describe('readiness of isolated instances (TRITONBACKEND_ModelInstanceReady, as in-process)', () => {
  it('requests are answered although the backend reports not ready', async () => {
    const all = await Promise.all([1, 2, 3, 4].map((v) => infer('iso_not_ready', [v])));
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(all.map((r) => r.json.outputs[0].data)).toEqual([[1], [2], [3], [4]]);
  });

  it("the readiness endpoint and the repository index report the backend's reason", async () => {
    expect(await ready('iso_not_ready')).toBe(false);
    expect(await ready('iso')).toBe(true);
    const idx = (await postJson(`${url}/v2/repository/index`, {})).json as { name: string; state?: string; reason?: string }[];
    expect(idx.find((m) => m.name === 'iso_not_ready')?.reason ?? '').toMatch(/cpp_faults: not ready on purpose/);
  });
});
