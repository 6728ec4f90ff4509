/**
 * `warden backend new|build|test|check|upload|log`: the tenant backend kit (docs/tenant-guide.md),
 * dispatched from host/src/cli.ts. Results go to stdout (`test` prints the response as KServe v2
 * JSON, alone, so it pipes into `jq`), reports and errors to stderr; the error of a failed step is
 * the server's own text where the server would fail the same way.
 */
import { pino } from 'pino';
import type { EngineName } from '../backends/wasm/engines.js';
import { ENGINE_NAMES } from '../backends/wasm/engines.js';
import { buildProject } from './build.js';
import { checkProject } from './check.js';
import { readProject, LANGUAGES, type KitProject, type Language } from './project.js';
import { runProject, type RunResult } from './run.js';
import { newProject } from './scaffold.js';
import { logLineText, readModelLog } from './log.js';
import { uploadProject } from './upload.js';

/** Where the CLI writes: `process.stdout` / `process.stderr`, or a capture in tests. */
export interface BackendCliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
}

export const BACKEND_USAGE = `usage: warden backend <command> [options]

commands:
  new <name> --lang ts|c|py|rust [--dir D]
                                       make a backend project in D (default ./<name>)
  build [dir]                          build dir's component into dir/1/model.wasm
  test [dir] --input in.json [--engine v8|wasmtime] [--runs N] [--verbose]
                                       run the component here on the server's engines (no server);
                                       in.json is a KServe v2 JSON request body; --verbose prints
                                       the backend's log and the guest's
  check [dir | file.wasm]              run the server's load-time checks (same errors)
  upload [dir] --url U [--token T] [--model NAME]
                                       load the project on a server (POST /v2/repository/models/NAME/load)
  log [dir] --url U [--token T] [--model NAME] [--since SEQ]
                                       print the model's log on a server (what the backend logged)

dir defaults to the working directory.
`;

class UsageError extends Error {}

/** Flags each command accepts; `true` = takes a value. */
const FLAGS: Record<string, Record<string, boolean>> = {
  new: { '--lang': true, '--dir': true },
  build: {},
  test: { '--input': true, '--engine': true, '--runs': true, '--verbose': false },
  check: {},
  upload: { '--url': true, '--token': true, '--model': true },
  log: { '--url': true, '--token': true, '--model': true, '--since': true },
};

interface Parsed {
  command: string;
  positional: string[];
  flags: Record<string, string>;
}

function parseArgs(argv: readonly string[]): Parsed | 'help' {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') return 'help';
  const accepted = FLAGS[command];
  if (!accepted) throw new UsageError(`unknown command '${command}'`);
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--help' || a === '-h') return 'help';
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (!(name in accepted)) throw new UsageError(`${command}: unknown option ${name}`);
    if (!accepted[name]) {
      flags[name] = 'true';
      continue;
    }
    const value = eq > 0 ? a.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new UsageError(`${command}: ${name} needs a value`);
    flags[name] = value;
  }
  if (positional.length > 1) throw new UsageError(`${command}: unexpected argument '${positional[1]}'`);
  return { command, positional, flags };
}

/** The response as JSON text: one output per line, so that large outputs stay readable. */
function responseJson(r: RunResult['response']): string {
  const outputs = r.outputs.map((o) => `    ${JSON.stringify(o)}`).join(',\n');
  return `{\n  "model_name": ${JSON.stringify(r.model_name)},\n  "model_version": ${JSON.stringify(r.model_version)},\n  "outputs": [\n${outputs}\n  ]\n}\n`;
}

const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
const ms = (n: number) => `${n.toFixed(1)} ms`;

/**
 * Runs `warden backend ...`; `argv` is what follows `backend`.
 * @returns the exit code: 0 done, 1 failed (the error on stderr), 2 bad usage
 */
export async function runBackendCli(argv: readonly string[], io: BackendCliIo): Promise<number> {
  let p: Parsed | 'help';
  try {
    p = parseArgs(argv);
  } catch (e) {
    io.stderr.write(`warden backend: ${(e as Error).message}\n\n${BACKEND_USAGE}`);
    return 2;
  }
  if (p === 'help') {
    io.stdout.write(BACKEND_USAGE);
    return 0;
  }
  try {
    return await dispatch(p, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`warden backend: ${e.message}\n\n${BACKEND_USAGE}`);
      return 2;
    }
    io.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
}

async function dispatch({ command, positional, flags }: Parsed, io: BackendCliIo): Promise<number> {
  const dir = positional[0];
  switch (command) {
    case 'new': {
      if (!dir) throw new UsageError('new: the project needs a name');
      const lang = flags['--lang'] === 'python' ? 'py' : flags['--lang'];
      if (!LANGUAGES.includes(lang as Language)) throw new UsageError(`new: --lang must be one of ${LANGUAGES.join(', ')}`);
      const p = await newProject(dir, lang as Language, flags['--dir']);
      io.stdout.write(`created ${p.dir} (${lang}, warden:backend@${p.manifest.wit})\nnext: cd ${p.dir} && warden backend build\n`);
      return 0;
    }
    case 'build': {
      const r = await buildProject(readProject(dir));
      io.stdout.write(r.rebuilt ? `built 1/model.wasm (${r.bytes} bytes) in ${ms(r.ms)}\n` : `1/model.wasm is up to date (${r.bytes} bytes)\n`);
      return 0;
    }
    case 'test': {
      const input = flags['--input'];
      if (!input) throw new UsageError('test: --input <request.json> is required');
      const engine = flags['--engine'];
      if (engine !== undefined && !ENGINE_NAMES.includes(engine as EngineName))
        throw new UsageError(`test: --engine must be one of ${ENGINE_NAMES.join(', ')}`);
      const runs = flags['--runs'] === undefined ? 1 : Number(flags['--runs']);
      if (!Number.isSafeInteger(runs) || runs < 1) throw new UsageError('test: --runs must be a positive integer');
      const logger = pino({ level: flags['--verbose'] ? 'info' : 'error', base: undefined }, pino.destination({ dest: 2, sync: true }));
      const r = await runProject(readProject(dir), { input, engine: engine as EngineName | undefined, runs, logger });
      io.stdout.write(responseJson(r.response));
      const exec = [...r.executeMs].sort((a, b) => a - b);
      const median = exec[Math.floor(exec.length / 2)]!;
      io.stderr.write(
        `engine ${r.engine}: load ${ms(r.loadMs)}, start ${ms(r.startMs)}, execute ${ms(median)}${exec.length > 1 ? ` (median of ${exec.length}, min ${ms(exec[0]!)})` : ''}\n` +
          `memory: ${mib(r.reservedBytes)} reserved (memory_limit_bytes ${r.memoryLimitBytes} per linear memory), process peak RSS ${mib(r.peakRssBytes)}\n`,
      );
      return 0;
    }
    case 'check': {
      const file = dir?.endsWith('.wasm') ? dir : undefined;
      let project: KitProject | undefined;
      if (!file) project = readProject(dir);
      const r = await checkProject(project, file);
      io.stdout.write(
        `${r.component}: passes the server's load-time checks\n  imports: ${r.imports.join(', ') || 'none'}\n  exports: ${r.exports.join(', ')}\n`,
      );
      if (r.limits) {
        io.stdout.write(
          `  limits: ${r.memories} linear ${r.memories === 1 ? 'memory' : 'memories'} × ${r.limits.memoryBytes} bytes, execute ${r.limits.executeMs} ms, log ${r.limits.logBytes} bytes\n`,
        );
      }
      return 0;
    }
    case 'upload': {
      const url = flags['--url'];
      if (!url) throw new UsageError('upload: --url is required');
      const r = await uploadProject(readProject(dir), { url, token: flags['--token'], model: flags['--model'] });
      io.stdout.write(`loaded model '${r.model}' on ${url} in ${ms(r.ms)}\n`);
      return 0;
    }
    case 'log': {
      const url = flags['--url'];
      if (!url) throw new UsageError('log: --url is required');
      const since = flags['--since'] === undefined ? 0 : Number(flags['--since']);
      if (!Number.isSafeInteger(since) || since < 0) throw new UsageError('log: --since must be a non-negative integer');
      const project = flags['--model'] !== undefined && dir === undefined ? undefined : readProject(dir);
      const r = await readModelLog(project, { url, token: flags['--token'], model: flags['--model'], since });
      for (const l of r.lines) io.stdout.write(`${logLineText(l)}\n`);
      if (r.dropped_lines > 0) io.stderr.write(`${r.dropped_lines} older lines (${r.dropped_bytes} bytes) were dropped by the log's bounds\n`);
      return 0;
    }
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}
