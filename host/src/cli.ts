#!/usr/bin/env node
/**
 * `warden` — the server's command line, with tritonserver's flags. SIGTERM / SIGINT stop it
 * gracefully: stop accepting, finish in-flight requests (at most `--exit-timeout-secs`), unload
 * models. Logging never takes the process down: a closed stdout (EPIPE) or an unwritable log file
 * silences the log instead of crashing or hanging the exit.
 */
import { pino, type DestinationStream } from 'pino';
import { USAGE, UsageError, parseCli } from './cli-options.js';
import { startServer } from './server.js';
import { effectiveLogStyle, prettyLines } from './log-output.js';
import { TRITON_PROTOCOL_VERSION, WARDEN_NAME, WARDEN_VERSION } from './project.js';

async function main(): Promise<void> {
  if (process.argv[2] === 'tenants') {
    // `warden tenants add|rotate|remove|list`: edits the tenants file (host/src/tenancy/cli.ts).
    const { runTenantsCli } = await import('./tenancy/cli.js');
    process.exitCode = await runTenantsCli(process.argv.slice(3), process);
    return;
  }
  if (process.argv[2] === 'backend') {
    // `warden backend new|build|test|check|upload`: the tenant backend kit (host/src/kit/cli.ts).
    const { runBackendCli } = await import('./kit/cli.js');
    process.exitCode = await runBackendCli(process.argv.slice(3), process);
    return;
  }
  let opts;
  try {
    opts = parseCli(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`error: ${e.message}\n\n${USAGE}`);
      process.exit(1);
    }
    throw e;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (opts.version) {
    process.stdout.write(`${WARDEN_NAME} ${WARDEN_VERSION} (Triton protocol ${TRITON_PROTOCOL_VERSION})\n`);
    return;
  }
  const logFile = opts.logSettings?.log_file;
  // Asynchronous, and bounded: a stdout nobody reads drops log lines past 16 MiB instead of growing.
  const dest = pino.destination(
    logFile ? { dest: logFile, mkdir: true, append: true, sync: false, maxLength: 16 << 20 } : { dest: 1, sync: false, maxLength: 16 << 20 },
  );
  let broken = false;
  // EPIPE (stdout is a closed pipe) or a failing log file: stop writing, keep serving.
  const onLogError = (): void => {
    broken = true;
  };
  dest.on('error', onLogError);
  process.stdout.on('error', onLogError);
  // --log-style: readable lines for a person at a terminal, JSON lines otherwise (log-output.ts).
  const pretty =
    effectiveLogStyle(opts.logStyle, process.stdout.isTTY === true, logFile) === 'pretty'
      ? prettyLines({ iso8601: opts.logSettings?.log_format === 'ISO8601', colour: !logFile && process.stdout.isTTY === true })
      : undefined;
  const stream: DestinationStream = { write: (line: string) => (broken ? undefined : dest.write(pretty ? pretty(line) : line)) };
  const logger = pino(
    {
      level: (opts.logVerbose ?? 0) > 0 ? 'debug' : 'info',
      base: { service: 'warden' },
      timestamp: opts.logSettings?.log_format === 'ISO8601' ? pino.stdTimeFunctions.isoTime : pino.stdTimeFunctions.epochTime,
    },
    stream,
  );
  const ignored = opts.notes.ignoredFlags;
  if (ignored.length > 0) {
    logger.warn({ flags: ignored }, `ignoring tritonserver flags for features Warden does not have: ${ignored.join(', ')}`);
  }
  let server;
  try {
    server = await startServer({ ...opts, logger });
  } catch (e) {
    logger.fatal({ err: e }, 'failed to start');
    process.exit(1);
  }
  let signals = 0;
  const stop = (sig: string) => {
    if (++signals > 1) {
      logger.warn({ signal: sig }, 'second signal, exiting now');
      process.exit(1);
    }
    logger.info({ signal: sig }, 'shutting down gracefully');
    // Whatever a backend does, the process is gone a little after the exit timeout.
    setTimeout(() => process.exit(1), ((opts.exitTimeoutSecs ?? 30) + 10) * 1000).unref();
    // Flush what can be written within a second, then exit without the synchronous flush at exit,
    // which retries for ever on a full pipe nobody reads.
    const exit = (code: number) => {
      const done = () => {
        dest.flushSync = () => undefined;
        process.exit(code);
      };
      if (broken) return done();
      setTimeout(done, 1000).unref();
      try {
        // end() writes what is buffered, then closes ('close').
        dest.once('close', done);
        dest.end();
      } catch {
        done();
      }
    };
    server.stop().then(
      () => exit(0),
      (err) => {
        logger.error({ err }, 'error during shutdown');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

process.on('unhandledRejection', (reason) => {
  // Never let a stray promise take the server down; log it loudly instead.
  try {
    process.stderr.write(`${JSON.stringify({ level: 50, msg: 'unhandled promise rejection', err: String((reason as Error)?.stack ?? reason) })}\n`);
  } catch {
    // stderr closed too: nothing to tell
  }
});

void main();
