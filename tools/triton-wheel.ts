/**
 * The real Triton: PyPI's `nvidia-pytriton` wheel (pinned version and sha256) carries a real
 * `tritonserver` 2.51, Triton's unmodified prebuilt Python backend (`libtriton_python.so`, its
 * `triton_python_backend_stub`s) and their bundled libraries (`nvidia_pytriton.libs/`, names
 * renamed by auditwheel, e.g. `libtritonserver-717102f0.so`). Used by the tests
 * (test/backends/native/triton-wheel.ts and the differential tests) and by the vs-Triton benchmark
 * (bench/vs-triton.ts); this folder is compiled with host/src and bench (tsconfig.json) and never
 * imports test/.
 *
 * `pip download` into `.cache/` once (55 MB), then only what is needed is unpacked (the Python
 * backend, the 3.11 stub, `bin/tritonserver` and the bundled libraries). Two backend directories
 * are laid out from it:
 *
 * - `triton/…/backends` for the real `tritonserver` (Triton's install layout: the stub next to
 *   `libtriton_python.so`);
 * - `warden/…/backends` for Warden: the same files (symbolic links), with
 *   `nvidia_pytriton.libs/libtritonserver-717102f0.so` a link to Warden's own
 *   `native/build/Release/libtritonserver.so`. `libtriton_python.so` needs that name (its RPATH
 *   is `$ORIGIN/../../../../nvidia_pytriton.libs`); the dynamic loader finds the link, sees the same
 *   file as the library the addon already loaded and binds every TRITONSERVER_* / TRITONBACKEND_*
 *   import to Warden. Nothing in any binary is changed; Triton's core library is never loaded.
 *
 * The stub embeds the system's `libpython3.11.so.1.0` in isolated mode (PYTHONPATH is ignored);
 * Triton puts the backend directory on its `sys.path`, so numpy 1.x (pip `--target` into the
 * cache) is linked into `backends/python/` of both layouts, as a Triton container has numpy
 * installed system-wide. pip comes from the interpreter the caller names.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exec, indexReachable, PROJECT_ROOT, withLock } from './pip.js';

export const PYTRITON_VERSION = '0.7.0';
const WHEEL = `nvidia_pytriton-${PYTRITON_VERSION}-py3-none-manylinux_2_35_x86_64.whl`;
/** sha256 of the wheel as PyPI serves it (checked by pip with --require-hashes). */
const WHEEL_SHA256 = '21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df';
/** The stub's Python (the wheel has stubs for 3.8–3.13; this one links the system libpython3.11). */
export const STUB_PYTHON = '3.11';
/** numpy for the stub: the wheel requires numpy<2 (the last 1.x release). */
export const STUB_NUMPY_VERSION = '1.26.4';
/** auditwheel's name for Triton's core library inside the wheel (what libtriton_python.so needs). */
export const WHEEL_TRITONSERVER_LIB = 'libtritonserver-717102f0.so';

export const CACHE_DIR = join(PROJECT_ROOT, '.cache', `nvidia-pytriton-${PYTRITON_VERSION}`);
const UNPACKED = join(CACHE_DIR, 'x');
const BACKENDS_REL = join('pytriton', 'tritonserver', 'backends');
const PYTHON_FILES = ['libtriton_python.so', 'triton_python_backend_utils.py'];

export type TritonWheel =
  | {
      ok: true;
      /** `--backend-directory` for Warden (its `python/libtriton_python.so` is Triton's). */
      wardenBackends: string;
      /** `--backend-directory` for the real tritonserver. */
      tritonBackends: string;
      /** The real tritonserver executable. */
      tritonserver: string;
    }
  | { ok: false; reason: string };

/** A tritonserver process of the wheel: its HTTP address and everything it printed. */
export interface TritonProcess {
  proc: ChildProcess;
  url: string;
  log: string[];
}

/** Stops a server process this module started: SIGTERM, then SIGKILL after 20 s (never leaves one behind). */
export async function stopTritonServer(s: { proc: ChildProcess } | undefined): Promise<void> {
  if (!s || s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  await Promise.race([exited, sleep(20_000)]);
  if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
}

/**
 * Wait until `url`'s `/v2/health/ready` answers 200, polling every 250 ms; throws (naming the
 * server `name`, with the tail of its `log`) if `proc` exits or `ms` pass first.
 */
export async function waitTritonReady(url: string, proc: ChildProcess, log: string[], ms: number, name = 'tritonserver'): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${name} exited (${proc.exitCode}):\n${log.join('').slice(-4000)}`);
    const ready = await fetch(`${url}/v2/health/ready`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`${name} not ready after ${ms} ms:\n${log.join('').slice(-4000)}`);
    await sleep(250);
  }
}

/** A free TCP port on 127.0.0.1 (the kernel's choice; free when returned). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/** Options of {@link startTritonServer} beyond the repository and its models. */
export interface TritonServerOptions {
  /** Serve gRPC on this port (default: gRPC off). */
  grpcPort?: number;
  /** `--backend-directory` (default: the wheel's own, `tritonBackends`). */
  backendDirectory?: string;
  /** Environment over this process's (e.g. LD_LIBRARY_PATH from {@link sharedBackendLayout}). */
  env?: NodeJS.ProcessEnv;
  /** More command-line arguments. */
  args?: readonly string[];
}

/**
 * The wheel's tritonserver on `repoPath` in explicit mode with `models` loaded, HTTP on a free
 * port (gRPC only when `opts.grpcPort` is given), its Python stubs' shared memory named
 * `<shmPrefix><uuid>`; ready within 120 s or killed and thrown.
 */
export async function startTritonServer(
  w: Extract<TritonWheel, { ok: true }>,
  repoPath: string,
  models: readonly string[],
  shmPrefix: string,
  opts: TritonServerOptions = {},
): Promise<TritonProcess> {
  const [http, metrics] = [await freePort(), await freePort()];
  const log: string[] = [];
  const proc = spawn(
    w.tritonserver,
    [
      `--model-repository=${repoPath}`,
      `--backend-directory=${opts.backendDirectory ?? w.tritonBackends}`,
      '--model-control-mode=explicit',
      ...models.map((m) => `--load-model=${m}`),
      `--http-port=${http}`,
      `--metrics-port=${metrics}`,
      '--allow-metrics=false',
      ...(opts.grpcPort === undefined ? ['--allow-grpc=false'] : [`--grpc-port=${opts.grpcPort}`]),
      `--backend-config=python,shm-region-prefix-name=${shmPrefix}`,
      ...(opts.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } },
  );
  proc.stdout!.on('data', (d: Buffer) => log.push(d.toString()));
  proc.stderr!.on('data', (d: Buffer) => log.push(d.toString()));
  const url = `http://127.0.0.1:${http}`;
  try {
    await waitTritonReady(url, proc, log, 120_000);
  } catch (e) {
    proc.kill('SIGKILL'); // never leave a tritonserver (and its stubs) behind
    throw e;
  }
  return { proc, url, log };
}

/** Backend directories of {@link sharedBackendLayout}, and what tritonserver needs to use them. */
export interface SharedBackends {
  /** `--backend-directory` for Warden: Triton's Python backend bound to Warden's core library, and the native backends. */
  wardenBackends: string;
  /** `--backend-directory` for tritonserver: Triton's Python backend and the same native backend files. */
  tritonBackends: string;
  /**
   * LD_LIBRARY_PATH for tritonserver: a directory whose `libtritonserver.so` is the wheel's core
   * library, so native backends that name `libtritonserver.so` (no RPATH) bind to the core the
   * binary already loaded.
   */
  tritonLibraryPath: string;
}

/**
 * Both servers' backend directories under `root`, in the wheel's layout
 * (`<root>/<w|t>/pytriton/tritonserver/backends`, with `nvidia_pytriton.libs` four levels above
 * `python/`, libtriton_python.so's RPATH): Triton's Python backend files linked from the wheel
 * (each server's own layout) and each of `nativeBackends` linked from `nativeDir` (e.g.
 * build/backends/warden_identity), so both servers load the very same backend files. The two
 * differ only in the library Triton's core name resolves to.
 */
export function sharedBackendLayout(w: Extract<TritonWheel, { ok: true }>, root: string, nativeDir: string, nativeBackends: readonly string[]): SharedBackends {
  const layout = (dir: string, wheelBackends: string): string => {
    const backends = join(dir, BACKENDS_REL);
    mkdirSync(join(backends, 'python'), { recursive: true });
    const pythonFrom = join(wheelBackends, 'python');
    for (const f of readdirSync(pythonFrom)) if (f !== '__pycache__') symlinkSync(join(pythonFrom, f), join(backends, 'python', f));
    for (const b of nativeBackends) symlinkSync(join(nativeDir, b), join(backends, b));
    symlinkSync(libsOf(wheelBackends), join(dir, 'nvidia_pytriton.libs'));
    return backends;
  };
  const tritonLibraryPath = join(root, 'lib');
  mkdirSync(tritonLibraryPath, { recursive: true });
  symlinkSync(join(libsOf(w.tritonBackends), WHEEL_TRITONSERVER_LIB), join(tritonLibraryPath, 'libtritonserver.so'));
  return { wardenBackends: layout(join(root, 'w'), w.wardenBackends), tritonBackends: layout(join(root, 't'), w.tritonBackends), tritonLibraryPath };
}

/** The bundled-library directory of a layout, given its backend directory (`<dir>/pytriton/tritonserver/backends`). */
export function libsOf(backends: string): string {
  return join(backends, '..', '..', '..', 'nvidia_pytriton.libs');
}

/** Why this machine cannot run the wheel's binaries, or undefined if it can. */
export function platformProblem(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `the wheel is manylinux_2_35_x86_64; this is ${process.platform}/${process.arch}`;
  const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
  const [maj, min] = (glibc ?? '0.0').split('.').map(Number);
  if (!glibc || maj! < 2 || (maj === 2 && min! < 35)) return `the wheel needs glibc >= 2.35; this machine has ${glibc ?? 'no glibc'}`;
  return undefined;
}

/** Where {@link ensureTritonWheel} gets pip and Warden's core library. */
export interface WheelSources {
  /** An interpreter with pip (e.g. the compat venv's), or why there is none (the wheel then skips with it). */
  pip: () => Promise<{ ok: true; python: string } | { ok: false; reason: string }>;
  /** Warden's `libtritonserver.so` (native/build/Release), which Triton's core name resolves to in Warden's layout. */
  libtritonserver: string;
}

/**
 * Make sure the wheel is downloaded and unpacked and both backend directories are laid out.
 * @returns ok, or `{ok: false}` with the reason when the platform cannot run the binaries, there
 *   is no pip, PyPI is unreachable, or the system lacks libpython3.11 for the stub; throws on any
 *   other failure.
 */
export async function ensureTritonWheel(sources: WheelSources): Promise<TritonWheel> {
  const problem = platformProblem();
  if (problem) return { ok: false, reason: problem };
  const venv = await sources.pip();
  if (!venv.ok) return { ok: false, reason: venv.reason };

  return withLock(CACHE_DIR, async () => {
    if (!existsSync(join(UNPACKED, '.complete'))) {
      const got = await download(venv.python);
      if (got) return got;
      await unpack(venv.python);
    }
    const numpyDir = await ensureStubNumpy(venv.python);
    if (typeof numpyDir !== 'string') return numpyDir;
    const stub = join(UNPACKED, 'pytriton', 'tritonserver', 'python_backend_stubs', STUB_PYTHON, 'triton_python_backend_stub');
    const ldd = await exec('ldd', [stub], 30_000);
    if (ldd.code !== 0 || /not found/.test(ldd.out)) {
      return { ok: false, reason: `Triton's Python ${STUB_PYTHON} stub cannot run here (system libpython${STUB_PYTHON}.so.1.0 missing?):\n${ldd.out.trim()}` };
    }
    // Triton's layout for the real server: the stub and numpy next to libtriton_python.so.
    const tritonPython = join(UNPACKED, BACKENDS_REL, 'python');
    copyOnce(stub, join(tritonPython, 'triton_python_backend_stub'));
    linkNumpy(tritonPython, numpyDir);
    // Warden's layout: the same files, with Triton's core library name resolving to Warden's.
    const warden = join(CACHE_DIR, 'warden');
    rmSync(warden, { recursive: true, force: true });
    const wardenPython = join(warden, BACKENDS_REL, 'python');
    const wardenLibs = join(warden, 'nvidia_pytriton.libs');
    mkdirSync(wardenPython, { recursive: true });
    mkdirSync(wardenLibs, { recursive: true });
    for (const f of [...PYTHON_FILES, 'triton_python_backend_stub']) symlinkSync(join(tritonPython, f), join(wardenPython, f));
    linkNumpy(wardenPython, numpyDir);
    const libs = join(UNPACKED, 'nvidia_pytriton.libs');
    for (const f of readdirSync(libs)) {
      symlinkSync(f === WHEEL_TRITONSERVER_LIB ? sources.libtritonserver : join(libs, f), join(wardenLibs, f));
    }
    return {
      ok: true,
      wardenBackends: join(warden, BACKENDS_REL),
      tritonBackends: join(UNPACKED, BACKENDS_REL),
      tritonserver: join(UNPACKED, 'pytriton', 'tritonserver', 'bin', 'tritonserver'),
    };
  });
}

/** `pip download` the pinned wheel (hash-checked) into CACHE_DIR; a skip result if PyPI is unreachable. */
async function download(python: string): Promise<TritonWheel | undefined> {
  if (existsSync(join(CACHE_DIR, WHEEL))) return undefined;
  mkdirSync(CACHE_DIR, { recursive: true });
  const req = join(CACHE_DIR, 'requirements.txt');
  writeFileSync(req, `nvidia-pytriton==${PYTRITON_VERSION} --hash=sha256:${WHEEL_SHA256}\n`);
  const pip = await exec(
    python,
    [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--no-deps',
      '--only-binary=:all:',
      '--require-hashes',
      '--platform',
      'manylinux_2_35_x86_64',
      '--timeout',
      '30',
      '--retries',
      '2',
      '-d',
      CACHE_DIR,
      '-r',
      req,
    ],
    10 * 60_000,
  );
  if (pip.code === 0 && existsSync(join(CACHE_DIR, WHEEL))) return undefined;
  const probe = await indexReachable({}, 'nvidia-pytriton');
  if (!probe.reachable)
    return { ok: false, reason: `PyPI is unreachable (${probe.url}: ${probe.error}); cannot download nvidia-pytriton==${PYTRITON_VERSION}` };
  throw new Error(`pip download nvidia-pytriton==${PYTRITON_VERSION} failed although ${probe.url} is reachable:\n${pip.out}`);
}

/**
 * numpy for the stub's interpreter, installed with pip into CACHE_DIR (`--target`, cp311 wheel):
 * the wheel's stub is built against numpy 1.x (nvidia-pytriton requires numpy<2; numpy 2 changed
 * the array descriptor layout and the stub then reads every output's byte size as 0).
 * @returns numpy's package directory, or a skip result if PyPI is unreachable.
 */
async function ensureStubNumpy(python: string): Promise<string | TritonWheel> {
  const target = join(CACHE_DIR, `numpy-${STUB_NUMPY_VERSION}`);
  const numpyDir = join(target, 'numpy');
  if (existsSync(join(target, '.complete'))) return numpyDir;
  rmSync(target, { recursive: true, force: true });
  const pip = await exec(
    python,
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--no-deps',
      '--only-binary=:all:',
      '--python-version',
      STUB_PYTHON,
      '--platform',
      'manylinux2014_x86_64',
      '--target',
      target,
      '--timeout',
      '30',
      '--retries',
      '2',
      `numpy==${STUB_NUMPY_VERSION}`,
    ],
    10 * 60_000,
  );
  if (pip.code === 0 && existsSync(numpyDir)) {
    writeFileSync(join(target, '.complete'), 'ok\n');
    return numpyDir;
  }
  const probe = await indexReachable({}, 'numpy');
  if (!probe.reachable)
    return { ok: false, reason: `PyPI is unreachable (${probe.url}: ${probe.error}); cannot install numpy==${STUB_NUMPY_VERSION} for the stub` };
  throw new Error(`pip install numpy==${STUB_NUMPY_VERSION} --target ${target} failed although ${probe.url} is reachable:\n${pip.out}`);
}

/** Unpack only the members the tests need (fixed names; the bundled libraries by plain file name). */
async function unpack(python: string): Promise<void> {
  rmSync(UNPACKED, { recursive: true, force: true });
  const script = `
import os, re, sys, zipfile
wheel, out, stub = sys.argv[1], sys.argv[2], sys.argv[3]
want = {'pytriton/tritonserver/backends/python/' + f for f in ('libtriton_python.so', 'triton_python_backend_utils.py')}
want |= {'pytriton/tritonserver/python_backend_stubs/%s/triton_python_backend_stub' % stub, 'pytriton/tritonserver/bin/tritonserver'}
lib = re.compile(r'^nvidia_pytriton\\.libs/[A-Za-z0-9._+-]+$')
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n in want or lib.match(n)]
    missing = want - set(names)
    if missing: sys.exit('missing from the wheel: %s' % sorted(missing))
    for n in names:
        z.extract(n, out)
        if not n.endswith('.py'): os.chmod(os.path.join(out, n), 0o755)
`;
  const r = await exec(python, ['-c', script, join(CACHE_DIR, WHEEL), UNPACKED, STUB_PYTHON], 5 * 60_000);
  if (r.code !== 0) throw new Error(`unpacking ${WHEEL} failed:\n${r.out}`);
  writeFileSync(join(UNPACKED, '.complete'), `${WHEEL}\n`);
}

function copyOnce(src: string, dest: string): void {
  if (existsSync(dest)) return;
  copyFileSync(src, dest);
  chmodSync(dest, 0o755);
}

/** numpy and its bundled libraries, linked into a directory on the stub's sys.path. */
function linkNumpy(dir: string, numpyDir: string): void {
  for (const [name, target] of [
    ['numpy', numpyDir],
    ['numpy.libs', `${numpyDir}.libs`],
  ] as const) {
    const dest = join(dir, name);
    rmSync(dest, { force: true });
    if (existsSync(target)) symlinkSync(target, dest);
  }
}
