// Minimal typings for the parts of autocannon 8 the benchmarks use (the package ships none).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds per request before it counts as a timeout. */
    timeout?: number;
    /** ms between samples; the run also checks for its end at this interval. */
    sampleInt?: number;
  }

  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p99: number;
    min: number;
    max: number;
    total: number;
  }

  interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    /** Seconds, two decimals. */
    duration: number;
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }

  function autocannon(opts: Options): Instance;
  export default autocannon;
}
