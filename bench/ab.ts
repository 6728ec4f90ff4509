/**
 * A/B of Warden builds by server CPU per request (for bisecting a regression): `node dist/bench/ab.js`.
 *
 * BENCH_AB is a `;`-separated list of `label=root[|node flags[|key=value,...[|server flags]]]`, each root a checkout
 * with its own `dist/` built (e.g. `git archive <commit> | tar -x -C /tmp/x`, node_modules symlinked, `tsc`);
 * empty node flags mean the checkout's `npm start` flags; the optional `key=value` pairs become `simple`'s config
 * `parameters` (e.g. `inline_run_max_us=0`); server flags are appended to Warden's command line, so one build
 * can be compared with itself under a flag: `BENCH_AB="fast=.;fastify=.|||--http-fast-path=false"`.
 * Every build is started at once on its own copy of `simple` (idle ones cost nothing), then
 * `ctx.measure` runs the cases round by round, one build after the other, so machine noise falls
 * evenly on all of them; medians of CPU µs/req (server process, /proc/<pid>/stat, all threads)
 * are what to compare on a busy machine. BENCH_AB_CONNECTIONS (default `1`) and BENCH_AB_KIND
 * (`json`, `binary` or `json,binary`; default `json`) choose the cases; BENCH_DURATION_S,
 * BENCH_WARMUP_S and BENCH_ROUNDS as for `npm run bench`.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createContext, startNodeFlags, type BenchCase, type ChildServer } from './ctx.js';
import { binaryRequest, jsonRequest } from './http.js';

interface Build {
  label: string;
  root: string;
  nodeArgs: string[];
  /** Config `parameters` appended to `simple`'s config.pbtxt. */
  params: [string, string][];
  /** Warden command-line flags after the defaults. */
  serverArgs: string[];
}

/** Parses BENCH_AB; a build without `|flags` gets its own package.json's `npm start` flags. */
function builds(spec: string): Build[] {
  return spec
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const eq = s.indexOf('=');
      if (eq <= 0) throw new Error(`BENCH_AB entry '${s}' is not label=root[|flags]`);
      const [root, flags, params, serverArgs] = s.slice(eq + 1).split('|') as [string, string | undefined, string | undefined, string | undefined];
      return {
        label: s.slice(0, eq),
        root,
        nodeArgs: flags === undefined || flags.trim() === '' ? startNodeFlags(root) : flags.split(/\s+/).filter(Boolean),
        params: (params ?? '')
          .split(',')
          .filter(Boolean)
          .map((kv) => kv.split('=') as [string, string]),
        serverArgs: (serverArgs ?? '').split(/\s+/).filter(Boolean),
      };
    });
}

async function main(): Promise<void> {
  const ctx = createContext();
  try {
    const list = builds(process.env.BENCH_AB ?? '');
    if (list.length === 0) throw new Error('set BENCH_AB="a=/path/to/checkout;b=/other|--node-flag"');
    const conns = (process.env.BENCH_AB_CONNECTIONS ?? '1').split(',').map(Number);
    const kinds = (process.env.BENCH_AB_KIND ?? 'json').split(',');
    const servers = new Map<Build, ChildServer>();
    for (const b of list) {
      const cli = join(b.root, 'dist', 'host', 'src', 'cli.js');
      if (!existsSync(cli)) throw new Error(`${cli} missing: build that checkout first`);
      const repo = await ctx.makeRepository(['simple']);
      for (const [k, v] of b.params) {
        appendFileSync(join(repo, 'simple', 'config.pbtxt'), `\nparameters { key: ${JSON.stringify(k)} value: { string_value: ${JSON.stringify(v)} } }\n`);
      }
      const port = await ctx.freePort();
      const metricsPort = await ctx.freePort();
      const grpcFlag = readFileSync(join(b.root, 'dist', 'host', 'src', 'cli-options.js'), 'utf8').includes('allow-grpc') ? ['--allow-grpc=false'] : [];
      const args = [
        ...b.nodeArgs,
        cli,
        '--model-repository',
        repo,
        '--http-port',
        String(port),
        '--metrics-port',
        String(metricsPort),
        ...grpcFlag,
        ...b.serverArgs,
      ];
      servers.set(b, await ctx.startChild(b.label, process.execPath, args, port, '/v2/health/ready'));
      ctx.log(`${b.label}: ${b.root} ${b.nodeArgs.join(' ')} ${b.serverArgs.join(' ')}`);
    }
    const cases: BenchCase[] = [];
    for (const c of conns) {
      for (const k of kinds) {
        for (const b of list) {
          cases.push({
            label: `${k} c=${c}`,
            target: b.label,
            server: servers.get(b)!,
            request: k === 'binary' ? binaryRequest() : jsonRequest(),
            connections: c,
          });
        }
      }
    }
    const res = await ctx.measure(cases);
    ctx.log(
      '\n' +
        ctx.table(
          ['case', 'build', 'infer/s (min–max)', 'p50 ms', 'p99 ms', 'CPU µs/req (median)', 'CPU µs/req per round'],
          res.map((r) => [
            r.label,
            r.target,
            `${r.rps.toFixed(0)} (${r.rpsMin.toFixed(0)}–${r.rpsMax.toFixed(0)})`,
            r.p50Ms.toFixed(3),
            r.p99Ms.toFixed(3),
            r.cpuUsPerReq.toFixed(0),
            r.rounds.map((x) => x.cpuUsPerReq.toFixed(0)).join(' '),
          ]),
        ),
    );
  } finally {
    await ctx.cleanup();
  }
}

await main();
