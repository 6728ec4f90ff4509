/**
 * Parsers of what the external load generators of bench/vs-triton.ts print: wrk 4.1 (`--latency`),
 * h2load 1.x and ghz (`-O json`). Pure functions (no process is started here).
 */

/** One load generator run, as the tool reported it. */
export interface ToolResult {
  /** Successful requests per second (wrk: every response minus non-2xx/3xx, over the tool's own time). */
  rps: number;
  /** 99th-percentile latency in ms; NaN when the tool reports no percentiles (h2load). */
  p99Ms: number;
  /** Requests answered successfully. */
  ok: number;
  /** Non-2xx answers, socket errors, timeouts, gRPC errors: any > 0 marks the run as failed. */
  failures: number;
  /** ghz: calls still in flight when the duration ended, cancelled by ghz itself (at most its concurrency; not failures). */
  cancelledAtEnd?: number;
  /** ghz: the error texts and their counts, for the report of a failed run. */
  errors?: Record<string, number>;
}

const UNIT_MS: Record<string, number> = { us: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };

/** `836.00us`, `1.23ms`, `2.00s` → ms. @throws Error on an unknown unit */
function durationMs(value: string, unit: string): number {
  const k = UNIT_MS[unit];
  if (k === undefined) throw new Error(`unknown duration unit '${unit}' in '${value}${unit}'`);
  return Number(value) * k;
}

/**
 * wrk's report with `--latency`: `Requests/sec:`, the `99%` line of the latency distribution,
 * `N requests in`, `Non-2xx or 3xx responses:` and `Socket errors:` (connect, read, write, timeout).
 * @throws Error when the report lacks Requests/sec or the 99% line (e.g. wrk failed to start)
 */
export function parseWrk(text: string): ToolResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(text);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s|m|h)\s*$/m.exec(text);
  const total = /^\s+(\d+) requests in /m.exec(text);
  if (!rps || !p99 || !total) throw new Error(`not a wrk --latency report:\n${text.slice(-2000)}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors = sock ? sock.slice(1).reduce((n, x) => n + Number(x), 0) : 0;
  const ok = Number(total[1]) - non2xx;
  const all = Number(total[1]);
  return { rps: all > 0 ? (Number(rps[1]) * ok) / all : 0, p99Ms: durationMs(p99[1]!, p99[2]!), ok, failures: non2xx + socketErrors };
}

/**
 * h2load's report: `finished in …, N req/s`, `requests: … N succeeded, N failed, N errored, N timeout`
 * and `status codes: N 2xx, …`. h2load reports no percentiles (p99 NaN). For gRPC it sees HTTP
 * statuses only, not the grpc-status trailer.
 * @throws Error when the report lacks those lines
 */
export function parseH2load(text: string): ToolResult {
  const fin = /^finished in [^,]+, ([\d.]+) req\/s/m.exec(text);
  const req = /^requests: .*?(\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/m.exec(text);
  const codes = /^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/m.exec(text);
  if (!fin || !req || !codes) throw new Error(`not an h2load report:\n${text.slice(-2000)}`);
  const ok = Number(codes[1]);
  const failures = Number(req[2]) + Number(req[3]) + Number(req[4]) + Number(codes[3]) + Number(codes[4]);
  const succeeded = Number(req[1]);
  return { rps: succeeded > 0 ? (Number(fin[1]) * ok) / succeeded : 0, p99Ms: NaN, ok, failures };
}

/**
 * ghz's JSON report (`-O json`): `rps`, `latencyDistribution` (ns), `statusCodeDistribution`
 * (gRPC status names → counts) and `errorDistribution` (error texts → counts). Calls ghz itself
 * cuts off when `-z` ends (`Canceled`, or `Unavailable` from the connection it closed)
 * are reported apart as `cancelledAtEnd`, not as failures.
 * @throws Error when the text is not such a report
 */
export function parseGhz(text: string): ToolResult {
  const r = JSON.parse(text) as {
    count?: number;
    rps?: number;
    latencyDistribution?: { percentage: number; latency: number }[] | null;
    statusCodeDistribution?: Record<string, number>;
    errorDistribution?: Record<string, number>;
  };
  if (typeof r.rps !== 'number' || typeof r.count !== 'number') throw new Error(`not a ghz JSON report: ${text.slice(0, 500)}`);
  const codes = r.statusCodeDistribution ?? {};
  const ok = codes.OK ?? 0;
  // ghz ends a -z run by cancelling what is in flight and closing its connection: those calls
  // end as Canceled or as Unavailable "use of closed network connection" / "transport is closing"
  // (grpc-go's texts for the client's own close; the caller bounds them by the concurrency).
  const closedByGhz = Object.entries(r.errorDistribution ?? {}).reduce(
    (n, [k, v]) => (/use of closed network connection|transport is closing/.test(k) ? n + v : n),
    0,
  );
  const cancelledAtEnd = (codes.Canceled ?? 0) + closedByGhz;
  const failures = Object.entries(codes).reduce((n, [k, v]) => (k === 'OK' || k === 'Canceled' ? n : n + v), 0) - closedByGhz;
  const p99 = r.latencyDistribution?.find((d) => d.percentage === 99)?.latency;
  return {
    rps: r.count > 0 ? (r.rps * ok) / r.count : 0,
    p99Ms: p99 === undefined ? NaN : p99 / 1e6,
    ok,
    failures,
    cancelledAtEnd,
    errors: r.errorDistribution ?? {},
  };
}
