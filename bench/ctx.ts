/**
 * Shared benchmark context: start servers in child processes, drive them with autocannon,
 * take medians over rounds, and format tables. Every suite (bench/http.ts, and the optional
 * bench/wasm.ts `benchWasm(ctx)` and bench/native.ts `benchNative(ctx)`) receives one
 * {@link BenchContext}.
 *
 * Load generator and servers share the machine's cores, so servers always run in their own
 * process (never in the benchmark's event loop).
 */
import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Project root: this file compiles to `dist/bench/ctx.js`. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A server running in a child process. */
export interface ChildServer {
  name: string;
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The last ~64 KiB the child wrote (stdout + stderr), for error messages. */
  output(): string;
  /**
   * CPU time (user + system, all threads) the child and its live descendants (Python stubs,
   * backend-host processes) have used so far, in µs, from `/proc/<pid>/stat`; undefined where that
   * is unavailable (non-Linux).
   */
  cpuMicros(): number | undefined;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process exited. */
  stop(): Promise<void>;
  /** The child's process id (undefined if it could not be spawned). */
  pid?: number;
}

/** One HTTP request autocannon repeats. */
export interface HttpRequestSpec {
  /** Path on the server, e.g. `/v2/models/simple/infer`. */
  path: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** Throughput and latency of one autocannon run. */
export interface LoadResult {
  /** 2xx responses per second of measured wall time. */
  rps: number;
  /** Latency percentiles over every 2xx response, ms (sub-ms resolution). */
  p50Ms: number;
  p99Ms: number;
  /** Responses counted (2xx). */
  ok: number;
  /** Non-2xx responses + socket errors + timeouts; any > 0 marks the run as failed. */
  failures: number;
  /** Server CPU time per 2xx response, µs (all the server's threads); NaN if unknown. */
  cpuUsPerReq: number;
}

/** One benchmark case: a request against a server at a concurrency. */
export interface BenchCase {
  /** Row label, e.g. `JSON c=16`. */
  label: string;
  /** Which server (column group), e.g. `warden` / `floor`. */
  target: string;
  server: ChildServer;
  request: HttpRequestSpec;
  connections: number;
}

/** Medians over rounds of one case. */
export interface CaseSummary {
  label: string;
  target: string;
  connections: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerReq: number;
  /** Lowest and highest infer/s over the rounds (spread = machine noise). */
  rpsMin: number;
  rpsMax: number;
  rounds: LoadResult[];
}

export interface BenchContext {
  root: string;
  /** Seconds measured per case and round (BENCH_DURATION_S, default 5). */
  durationS: number;
  /** Seconds of warm-up per case before the first round (BENCH_WARMUP_S, default 2). */
  warmupS: number;
  /** Rounds per case; results are medians (BENCH_ROUNDS, default 3, at least 3 for reports). */
  rounds: number;
  log(line: string): void;
  /** A free TCP port on 127.0.0.1. */
  freePort(): Promise<number>;
  /**
   * A temporary model repository holding copies of the named models from the project's
   * `model_repository/` (falling back to the vendored Triton examples in `third_party/triton-examples/`).
   * Removed at exit.
   */
  makeRepository(models: string[]): Promise<string>;
  /**
   * Start Warden (`node dist/host/src/cli.js`) on `repository` with ephemeral ports and wait
   * until `GET /v2/health/ready` answers 200. Extra CLI flags may be appended; `nodeArgs` go to
   * node itself (e.g. `--trace-gc`).
   */
  startWarden(repository: string, extraArgs?: string[], nodeArgs?: string[]): Promise<ChildServer>;
  /**
   * Start any server process that listens on `port`, waiting until `readyPath` answers 200.
   */
  startChild(name: string, cmd: string, args: string[], port: number, readyPath: string): Promise<ChildServer>;
  /** One autocannon run of `durationS` seconds. */
  load(server: ChildServer, request: HttpRequestSpec, connections: number, durationS: number): Promise<LoadResult>;
  /**
   * Warm every case up once, then run `rounds` rounds; in each round cases run one after
   * another in the given order (interleaving targets spreads machine noise evenly).
   */
  measure(cases: BenchCase[]): Promise<CaseSummary[]>;
  median(xs: number[]): number;
  /** A Markdown table (also readable in a terminal). */
  table(headers: string[], rows: (string | number)[][]): string;
  /** Record a titled section for the final summary printed by run.ts. */
  section(title: string, body: string): void;
  sections: { title: string; body: string }[];
  /** Machine facts for the report: CPU model, cores, memory, Node version. */
  machine(): string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** Clock ticks per second for /proc/<pid>/stat times (`getconf CLK_TCK`, 100 on Linux). */
const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/** The live descendants of `pid` (/proc/<pid>/task/<tid>/children over its threads, recursively). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)) if (c) out.push(Number(c), ...childPids(Number(c)));
      } catch {
        /* thread gone */
      }
    }
  } catch {
    /* process gone, or not Linux */
  }
  return out;
}

/**
 * CPU time (user + system, µs) of `pid` so far, from `/proc/<pid>/stat`, plus that of its live
 * descendants (backend-host processes, Python stubs: the server's work done elsewhere). A
 * descendant that exits during a measurement drops out of the sum (restarts are not measured).
 */
export function procCpuMicros(pid: number | undefined, withChildren = true): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(rest[11]) + Number(rest[12]);
    if (!Number.isFinite(ticks)) return undefined;
    let us = (ticks * 1e6) / CLK_TCK;
    if (withChildren) for (const c of childPids(pid)) us += procCpuMicros(c, false) ?? 0;
    return us;
  } catch {
    return undefined;
  }
}

/**
 * The node flags `npm start` gives Warden (package.json's `start` script, e.g. the young-generation
 * size), so the benchmark measures the server as it is started.
 */
export function startNodeFlags(root = ROOT): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const m = /\bnode((?:\s+--\S+)*)\s+dist\/host\/src\/cli\.js/.exec(pkg.scripts?.start ?? '');
  return m ? m[1]!.split(/\s+/).filter(Boolean) : [];
}

function envNumber(name: string, dflt: number): number {
  const v = process.env[name];
  const n = v === undefined ? NaN : Number(v);
  return Number.isFinite(n) && n > 0 ? n : dflt;
}

/** Build the context; `cleanup()` stops every child and removes temporary directories. */
export function createContext(): BenchContext & { cleanup(): Promise<void> } {
  const children: ChildServer[] = [];
  const tempDirs: string[] = [];
  const sections: { title: string; body: string }[] = [];

  const ctx: BenchContext & { cleanup(): Promise<void> } = {
    root: ROOT,
    durationS: envNumber('BENCH_DURATION_S', 5),
    warmupS: envNumber('BENCH_WARMUP_S', 2),
    rounds: Math.round(envNumber('BENCH_ROUNDS', 3)),
    sections,

    log(line) {
      process.stdout.write(line + '\n');
    },

    freePort() {
      return new Promise((res, rej) => {
        const srv = createServer();
        srv.once('error', rej);
        srv.listen(0, '127.0.0.1', () => {
          const addr = srv.address();
          const port = typeof addr === 'object' && addr ? addr.port : 0;
          srv.close(() => res(port));
        });
      });
    },

    async makeRepository(models) {
      const dir = await mkdtemp(join(tmpdir(), 'warden-bench-repo-'));
      tempDirs.push(dir);
      for (const m of models) {
        const local = join(ROOT, 'model_repository', m);
        const vendored = join(ROOT, 'third_party', 'triton-examples', m);
        const src = existsSync(join(local, 'config.pbtxt')) ? local : vendored;
        if (!existsSync(join(src, 'config.pbtxt'))) throw new Error(`model ${m} not found in model_repository/ or third_party/triton-examples/`);
        await cp(src, join(dir, m), { recursive: true });
      }
      return dir;
    },

    async startWarden(repository, extraArgs = [], nodeArgs = []) {
      const port = await ctx.freePort();
      const metricsPort = await ctx.freePort();
      const cli = join(ROOT, 'dist', 'host', 'src', 'cli.js');
      if (!existsSync(cli)) throw new Error(`${cli} missing: run \`npm run build\` first`);
      const envNodeArgs = process.env.BENCH_WARDEN_NODE_ARGS?.split(/\s+/).filter(Boolean);
      const args = [
        ...(envNodeArgs ?? startNodeFlags()),
        ...nodeArgs,
        cli,
        '--model-repository',
        repository,
        '--http-port',
        String(port),
        '--metrics-port',
        String(metricsPort),
        // No gRPC on the default 8001 unless a bench asks for it (port clashes with other runs).
        ...(extraArgs.some((a) => a.startsWith('--grpc-port') || a.startsWith('--allow-grpc')) ? [] : ['--allow-grpc=false']),
        ...extraArgs,
      ];
      return ctx.startChild('warden', process.execPath, args, port, '/v2/health/ready');
    },

    async startChild(name, cmd, args, port, readyPath) {
      const child: ChildProcess = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const keep = (d: Buffer) => {
        out = (out + d.toString()).slice(-65536);
      };
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      let exited = false;
      const exitPromise = new Promise<void>((r) =>
        child.once('exit', () => {
          exited = true;
          r();
        }),
      );
      const url = `http://127.0.0.1:${port}`;
      const server: ChildServer = {
        name,
        url,
        port,
        output: () => out,
        cpuMicros: () => (exited ? undefined : procCpuMicros(child.pid)),
        pid: child.pid,
        async stop() {
          if (exited) return;
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exitPromise;
          clearTimeout(t);
        },
      };
      children.push(server);
      const deadline = Date.now() + 120_000;
      for (;;) {
        if (exited) throw new Error(`${name} exited during start-up:\n${out}`);
        try {
          const res = await fetch(url + readyPath, { signal: AbortSignal.timeout(2000) });
          await res.arrayBuffer();
          if (res.status === 200) return server;
        } catch {
          /* not listening yet */
        }
        if (Date.now() > deadline) {
          await server.stop();
          throw new Error(`${name} not ready on ${url}${readyPath} after 120 s:\n${out}`);
        }
        await sleep(100);
      }
    },

    async load(server, request, connections, durationS) {
      const latencies: number[] = [];
      let ok = 0;
      let bad = 0;
      const instance = autocannon({
        url: server.url + request.path,
        method: request.method ?? 'POST',
        headers: request.headers,
        body: request.body,
        connections,
        pipelining: 1,
        duration: durationS,
        timeout: 10,
        sampleInt: 100,
      });
      instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
        if (statusCode >= 200 && statusCode < 300) {
          ok++;
          latencies.push(responseTimeMs);
        } else {
          bad++;
        }
      });
      const cpu0 = server.cpuMicros();
      const t0 = process.hrtime.bigint();
      let firstAt: bigint | undefined;
      instance.once('response', () => (firstAt = process.hrtime.bigint()));
      const result = await instance;
      const t1 = process.hrtime.bigint();
      const cpu1 = server.cpuMicros();
      const start = firstAt ?? t0;
      const seconds = Number(t1 - start) / 1e9;
      const sorted = Float64Array.from(latencies).sort();
      return {
        rps: ok / Math.max(seconds, 1e-9),
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        ok,
        failures: bad + result.errors + result.timeouts,
        cpuUsPerReq: cpu0 !== undefined && cpu1 !== undefined && ok > 0 ? (cpu1 - cpu0) / ok : NaN,
      };
    },

    async measure(cases) {
      for (const c of cases) {
        ctx.log(`  warm-up ${c.target} ${c.label} (${ctx.warmupS} s)`);
        const w = await ctx.load(c.server, c.request, c.connections, ctx.warmupS);
        if (w.failures > 0 || w.ok === 0) {
          throw new Error(`${c.target} ${c.label}: warm-up failed (${w.failures} failures, ${w.ok} ok)\n${c.server.output().slice(-2000)}`);
        }
      }
      const runs = new Map<BenchCase, LoadResult[]>(cases.map((c) => [c, []]));
      for (let r = 0; r < ctx.rounds; r++) {
        for (const c of cases) {
          const res = await ctx.load(c.server, c.request, c.connections, ctx.durationS);
          if (res.failures > 0) {
            throw new Error(`${c.target} ${c.label}: ${res.failures} failed requests in round ${r + 1}\n${c.server.output().slice(-2000)}`);
          }
          runs.get(c)!.push(res);
          ctx.log(
            `  round ${r + 1}/${ctx.rounds} ${c.target.padEnd(8)} ${c.label.padEnd(12)} ` +
              `${res.rps.toFixed(0).padStart(7)} infer/s  p50 ${res.p50Ms.toFixed(3)} ms  p99 ${res.p99Ms.toFixed(3)} ms  ` +
              `server CPU ${res.cpuUsPerReq.toFixed(0)} µs/req`,
          );
        }
      }
      return cases.map((c) => {
        const rs = runs.get(c)!;
        return {
          label: c.label,
          target: c.target,
          connections: c.connections,
          rps: ctx.median(rs.map((x) => x.rps)),
          p50Ms: ctx.median(rs.map((x) => x.p50Ms)),
          p99Ms: ctx.median(rs.map((x) => x.p99Ms)),
          cpuUsPerReq: ctx.median(rs.map((x) => x.cpuUsPerReq)),
          rpsMin: Math.min(...rs.map((x) => x.rps)),
          rpsMax: Math.max(...rs.map((x) => x.rps)),
          rounds: rs,
        };
      });
    },

    median(xs) {
      if (xs.length === 0) return NaN;
      const s = [...xs].sort((a, b) => a - b);
      const m = s.length >> 1;
      return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
    },

    table(headers, rows) {
      const cells = [headers, ...rows.map((r) => r.map(String))];
      const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
      const line = (r: string[]) => '| ' + r.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
      return [line(cells[0]), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...cells.slice(1).map(line)].join('\n');
    },

    section(title, body) {
      sections.push({ title, body });
    },

    machine() {
      const c = cpus();
      const gib = (totalmem() / 2 ** 30).toFixed(0);
      return `${c[0]?.model ?? 'unknown CPU'}, ${c.length} cores, ${gib} GiB, Node ${process.version}`;
    },

    async cleanup() {
      await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
      await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })));
    },
  };
  return ctx;
}
