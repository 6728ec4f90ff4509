/**
 * Waiting on real time, for what a test cannot drive itself (a server, a child process, a file
 * watcher). Scheduler time is never waited on: schedulers and model versions take a manual clock
 * (helpers/clock.ts).
 */

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Options of {@link until}. */
export interface UntilOptions {
  /** Give up after this many ms (default 10,000). */
  within?: number;
  /** Poll this often, ms (default 20). */
  every?: number;
  /** What is awaited, for the error. */
  what?: string;
}

/**
 * Poll `cond` (sync or async) until it holds: checked at once, then every `every` ms.
 * @throws Error "<what> not reached within N ms" after `within` ms.
 */
export async function until(cond: () => boolean | Promise<boolean>, { within = 10_000, every = 20, what = 'condition' }: UntilOptions = {}): Promise<void> {
  const end = Date.now() + within;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what} not reached within ${within} ms`);
    await sleep(every);
  }
}
