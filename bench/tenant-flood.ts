/**
 * Tenant A's load generator for the tenancy suite (bench/tenancy.ts), run as a child process so
 * that an attacker's client work does not slow the event loop that measures tenant B's latency.
 *
 * Usage: `node dist/bench/tenant-flood.js '<FloodWorkerSpec as JSON>'`. The child writes one JSON
 * line `{"ready":true}` once its flood is established (requests: at once; idle connections: once
 * every connection was attempted), then, after `durationMs`, one line `{"result": FloodWorkerResult}`
 * and exits. In-flight requests are abandoned (their sockets destroyed) at the end.
 */
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';

/** Repeated HTTP requests over `connections` keep-alive connections, optionally paced. */
export interface RequestFloodSpec {
  kind: 'requests';
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** Paths, used round robin by the connections' loops (loop i sends to paths[i % n]). */
  paths: string[];
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** File holding the request body (read once), if any. */
  bodyFile?: string;
  connections: number;
  /** Overall requests per second across all connections; unpaced when absent. */
  rate?: number;
  /** Source address of the connections (e.g. 127.0.0.2: another client than tenant B). */
  localAddress?: string;
  /** Per-request timeout, ms. */
  timeoutMs: number;
  durationMs: number;
}

/**
 * Connections opened and left idle before authentication: each sends `partial` (a request line
 * without the end of its headers) and nothing more; one the server closes (or refuses) is
 * reopened after `reopenMs`, so the flood keeps trying to hold `connections` open at once.
 */
export interface IdleFloodSpec {
  kind: 'idle';
  host: string;
  port: number;
  connections: number;
  partial: string;
  /** Delay before a closed or refused connection is reopened, ms. */
  reopenMs: number;
  localAddress?: string;
  durationMs: number;
}

export type FloodWorkerSpec = RequestFloodSpec | IdleFloodSpec;

/** What the flood got back. */
export interface FloodWorkerResult {
  /** Requests answered, by HTTP status (`"200"`, `"429"`, …). Idle floods: empty. */
  byStatus: Record<string, number>;
  /** Requests still unanswered when the flood ended (abandoned). */
  unanswered?: number;
  /** Socket errors and timeouts (requests), or failed connection attempts (idle). */
  errors: number;
  /** Idle floods: connections established in all, closed by the server, and the most open at once. */
  opened?: number;
  closedByServer?: number;
  maxOpen?: number;
  /** First socket error seen, for the report (e.g. ECONNRESET, EMFILE). */
  firstError?: string;
}

function emit(line: object): void {
  process.stdout.write(JSON.stringify(line) + '\n');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function requestFlood(spec: RequestFloodSpec): Promise<FloodWorkerResult> {
  const body = spec.bodyFile ? readFileSync(spec.bodyFile) : undefined;
  const pool = new Pool(spec.origin, {
    connections: spec.connections,
    pipelining: 1,
    headersTimeout: spec.timeoutMs,
    bodyTimeout: spec.timeoutMs,
    ...(spec.localAddress ? { localAddress: spec.localAddress } : {}),
  });
  const byStatus: Record<string, number> = {};
  let errors = 0;
  let inflight = 0;
  let firstError: string | undefined;
  const end = Date.now() + spec.durationMs;
  // Pacing: one shared schedule of send times, `1 / rate` apart.
  const gap = spec.rate ? 1000 / spec.rate : 0;
  let next = Date.now();
  const loop = async (i: number) => {
    const path = spec.paths[i % spec.paths.length]!;
    while (Date.now() < end) {
      if (gap > 0) {
        const at = next;
        next = Math.max(next + gap, Date.now() - 1000); // no catch-up burst after a stall longer than 1 s
        if (at > Date.now()) await sleep(at - Date.now());
        if (Date.now() >= end) break;
      }
      inflight++;
      try {
        const res = await pool.request({ path, method: spec.method, headers: spec.headers, body });
        await res.body.dump();
        byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1;
      } catch (e) {
        if (Date.now() >= end) break;
        errors++;
        firstError ??= (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        await sleep(10); // a refused connection must not become a busy loop
      } finally {
        inflight--;
      }
    }
  };
  emit({ ready: true });
  const loops = Array.from({ length: spec.connections }, (_, i) => loop(i));
  await Promise.race([Promise.all(loops), sleep(spec.durationMs + 200)]);
  const unanswered = inflight;
  void pool.destroy().catch(() => undefined);
  return { byStatus, errors, unanswered, ...(firstError ? { firstError } : {}) };
}

async function idleFlood(spec: IdleFloodSpec): Promise<FloodWorkerResult> {
  let open = 0;
  let maxOpen = 0;
  let opened = 0;
  let closedByServer = 0;
  let errors = 0;
  let firstError: string | undefined;
  let stopping = false;
  const sockets = new Set<Socket>();
  const open1 = (): Promise<void> =>
    new Promise((settle) => {
      const s = connect({ host: spec.host, port: spec.port, ...(spec.localAddress ? { localAddress: spec.localAddress } : {}) });
      sockets.add(s);
      let established = false;
      s.once('connect', () => {
        established = true;
        opened++;
        open++;
        maxOpen = Math.max(maxOpen, open);
        s.write(spec.partial);
        settle();
      });
      s.on('data', () => undefined);
      s.on('error', (e: NodeJS.ErrnoException) => {
        if (!established) {
          errors++;
          firstError ??= e.code ?? e.message;
        }
      });
      s.once('close', () => {
        sockets.delete(s);
        if (established) open--;
        settle();
        if (stopping) return;
        if (established) closedByServer++;
        setTimeout(() => void open1(), spec.reopenMs);
      });
    });
  // Open in batches so the attempt itself is not a SYN flood the kernel drops.
  for (let i = 0; i < spec.connections; i += 256) {
    await Promise.all(Array.from({ length: Math.min(256, spec.connections - i) }, open1));
  }
  emit({ ready: true });
  await sleep(spec.durationMs);
  stopping = true;
  for (const s of sockets) s.destroy();
  return { byStatus: {}, errors, opened, closedByServer, maxOpen, ...(firstError ? { firstError } : {}) };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as FloodWorkerSpec;
  const result = spec.kind === 'idle' ? await idleFlood(spec) : await requestFlood(spec);
  emit({ result });
  process.exit(0);
}

main().catch((e: unknown) => {
  process.stderr.write(`tenant-flood: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
