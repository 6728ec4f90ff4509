/**
 * The parsers of bench/load-output.ts over reports the tools really printed (wrk 4.1, h2load 1.52,
 * ghz 0.120): throughput, p99 and what counts as a failure.
 */
import { describe, expect, it } from 'vitest';
import { parseGhz, parseH2load, parseWrk } from '../../bench/load-output.js';

const WRK_OK = `Running 1s test @ http://127.0.0.1:18765/
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    55.55ms   19.43ms 105.86ms   80.00%
    Req/Sec    34.10     12.05    60.00     70.00%
  Latency Distribution
     50%   47.65ms
     75%   70.76ms
     90%   79.92ms
     99%  836.00us
  35 requests in 1.06s, 5.84MB read
Requests/sec:     32.92
Transfer/sec:      5.50MB
`;

const WRK_NON_2XX = `Running 1s test @ http://127.0.0.1:18765/
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.56ms    5.74ms  35.15ms   90.11%
    Req/Sec     1.09k   425.19     1.97k    70.00%
  Latency Distribution
     50%    0.91ms
     75%    3.99ms
     90%    9.18ms
     99%   29.41ms
  1088 requests in 1.00s, 589.88KB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 88
Requests/sec:   1084.07
Transfer/sec:    587.75KB
`;

const H2LOAD = `finished in 1.00s, 10254.00 req/s, 1.41MB/s
requests: 10254 total, 10270 started, 10254 done, 10250 succeeded, 4 failed, 0 errored, 0 timeout
status codes: 10250 2xx, 0 3xx, 0 4xx, 4 5xx
traffic: 1.41MB (1474038) total, 30.11KB (30837) headers (space savings 96.29%), 1.09MB (1138194) data
                     min         max         mean         sd        +/- sd
time for request:      153us     73.23ms      1.55ms      5.29ms    97.34%
`;

const ghz = (codes: Record<string, number>, errors: Record<string, number> = {}) =>
  JSON.stringify({
    count: Object.values(codes).reduce((a, b) => a + b, 0),
    rps: 8149.086276808753,
    errorDistribution: errors,
    statusCodeDistribution: codes,
    latencyDistribution: [
      { percentage: 50, latency: 5498987 },
      { percentage: 99, latency: 20942053 },
    ],
  });

describe('bench load generator reports', () => {
  it('wrk: requests/s, the 99% line in any unit, no failures', () => {
    expect(parseWrk(WRK_OK)).toEqual({ rps: 32.92, p99Ms: 0.836, ok: 35, failures: 0 });
    expect(parseWrk(WRK_OK.replace('836.00us', '1.5s')).p99Ms).toBe(1500);
  });

  it('wrk: non-2xx answers and socket errors are failures, and not counted as served', () => {
    const r = parseWrk(WRK_NON_2XX);
    expect(r.failures).toBe(88 + 3 + 2);
    expect(r.ok).toBe(1000);
    expect(r.rps).toBeCloseTo((1084.07 * 1000) / 1088, 6);
  });

  it('wrk: a report without --latency or an error text is refused', () => {
    expect(() => parseWrk(WRK_OK.replace(/ {5}99%.*\n/, ''))).toThrow(/not a wrk --latency report/);
    expect(() => parseWrk('unable to connect to 127.0.0.1:1 Connection refused')).toThrow(/not a wrk/);
  });

  it('h2load: req/s of 2xx answers, failed and 4xx/5xx as failures, no p99', () => {
    const r = parseH2load(H2LOAD);
    expect(r.ok).toBe(10250);
    expect(r.failures).toBe(4 + 4);
    expect(r.rps).toBeCloseTo(10254, 6);
    expect(r.p99Ms).toBeNaN();
    expect(() => parseH2load('connect error')).toThrow(/not an h2load report/);
  });

  it('ghz: OK calls, p99 in ms; calls ghz cut off at the end are apart from failures', () => {
    expect(parseGhz(ghz({ OK: 8158 }))).toMatchObject({ ok: 8158, failures: 0, cancelledAtEnd: 0, p99Ms: 20.942053 });
    const closed = 'rpc error: code = Unavailable desc = error reading from server: read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection';
    const cut = parseGhz(ghz({ OK: 100, Canceled: 2, Unavailable: 3 }, { [closed]: 1, 'rpc error: code = Unavailable desc = connection refused': 2 }));
    expect(cut).toMatchObject({ ok: 100, cancelledAtEnd: 3, failures: 2 });
    expect(cut.rps).toBeCloseTo((8149.086276808753 * 100) / 105, 6);
    const closing = parseGhz(ghz({ OK: 50, Unavailable: 1 }, { 'rpc error: code = Unavailable desc = transport is closing': 1 }));
    expect(closing).toMatchObject({ ok: 50, cancelledAtEnd: 1, failures: 0 });
    expect(() => parseGhz('{"error":"x"}')).toThrow(/not a ghz JSON report/);
  });
});
