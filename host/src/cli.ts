#!/usr/bin/env node
/**
 * `warden` — the server's command line, with tritonserver's flags. SIGTERM / SIGINT stop it
 * gracefully: stop accepting, finish in-flight requests, unload models.
 */
import { pino } from 'pino';
import { USAGE, UsageError, parseCli } from './cli-options.js';
import { startServer } from './server.js';

async function main(): Promise<void> {
  if (process.argv[2] === 'tenants') {
    // `warden tenants add|rotate|remove|list`: edits the tenants file (host/src/tenancy/cli.ts).
    const { runTenantsCli } = await import('./tenancy/cli.js');
    process.exitCode = await runTenantsCli(process.argv.slice(3), process);
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
  const logger = pino({ level: (opts.logVerbose ?? 0) > 0 ? 'debug' : 'info', base: { service: 'warden' } });
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
    server.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

process.on('unhandledRejection', (reason) => {
  // Never let a stray promise take the server down; log it loudly instead.
  pino().error({ err: reason }, 'unhandled promise rejection');
});

void main();
