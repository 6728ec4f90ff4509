/**
 * Triton's own, unmodified, prebuilt Python backend and real tritonserver for the tests: the pinned
 * PyPI `nvidia-pytriton` wheel, downloaded and laid out by tools/triton-wheel.ts (shared with the
 * vs-Triton benchmark), with pip from the compat `.venv` (test/compat/venv.ts) and Warden's own
 * `libtritonserver.so`; plus {@link wheelServers}, the vitest set-up of Warden and tritonserver on
 * one repository.
 */
import { afterAll, beforeAll } from 'vitest';
import type { RunningServer, ServerOptions } from '../../../host/src/server.js';
import { ensureTritonWheel as ensureWheel, startTritonServer, stopTritonServer, type TritonProcess, type TritonWheel } from '../../../tools/triton-wheel.js';
import { ensureCompatVenv } from '../../compat/venv.js';
import { tempRepo, type TempRepo } from '../../helpers/repo.js';
import { LIBTRITONSERVER, requireNativeBuild, startNativeServer } from './helpers.js';

export {
  WHEEL_TRITONSERVER_LIB,
  libsOf,
  sharedBackendLayout,
  startTritonServer,
  stopTritonServer,
  waitTritonReady,
  type TritonProcess,
  type TritonWheel,
} from '../../../tools/triton-wheel.js';

/**
 * The wheel, prepared with the compat venv's pip and Warden's native build.
 * @returns ok, or `{ok: false}` with the reason (tools/triton-wheel.ts, `ensureTritonWheel`)
 */
export function ensureTritonWheel(): Promise<TritonWheel> {
  return ensureWheel({ pip: ensureCompatVenv, libtritonserver: LIBTRITONSERVER });
}

/** The servers of {@link wheelServers}: undefined until started (and for good when the wheel is unavailable). */
export interface WheelServers {
  /** The wheel, or why it is unavailable (`not prepared` before `beforeAll`). */
  readonly wheel: TritonWheel;
  readonly repo: TempRepo | undefined;
  /** Warden's native host with Triton's Python backend from the wheel. */
  readonly warden: RunningServer | undefined;
  /** The wheel's tritonserver on the same repository (only with `tritonModels`). */
  readonly triton: TritonProcess | undefined;
}

/**
 * Servers of Triton's Python backend for the enclosing file or describe block. `beforeAll` (15 min:
 * the first run downloads the wheel) checks the native build and prepares the wheel; when it is
 * available, makes a temporary repository, lets `fill` write models into it and starts Warden's
 * native host on it with the wheel's backends (`warden` options over them) and, with
 * `tritonModels`, the wheel's tritonserver with those models loaded. Each names its Python
 * backend's /dev/shm regions `<warden|triton>_<tag>_<pid>_…`. `afterAll` stops both and
 * removes the repository.
 */
export function wheelServers(
  tag: string,
  fill: (repo: TempRepo) => void,
  { warden: wardenOpts = {}, tritonModels }: { warden?: Partial<ServerOptions>; tritonModels?: readonly string[] } = {},
): WheelServers {
  const servers: { -readonly [K in keyof WheelServers]: WheelServers[K] } = {
    wheel: { ok: false, reason: 'not prepared' },
    repo: undefined,
    warden: undefined,
    triton: undefined,
  };
  beforeAll(async () => {
    requireNativeBuild();
    const wheel = (servers.wheel = await ensureTritonWheel());
    if (!wheel.ok) return;
    const repo = (servers.repo = tempRepo());
    fill(repo);
    servers.warden = await startNativeServer(repo.path, {
      backendDirectory: wheel.wardenBackends,
      backendConfig: { python: { 'shm-region-prefix-name': `warden_${tag}_${process.pid}_` } },
      ...wardenOpts,
    });
    if (tritonModels) servers.triton = await startTritonServer(wheel, repo.path, tritonModels, `triton_${tag}_${process.pid}_`);
  }, 15 * 60_000);
  afterAll(async () => {
    await servers.warden?.stop();
    await stopTritonServer(servers.triton);
    servers.repo?.cleanup();
  }, 60_000);
  return servers;
}
