/**
 * The cancellation signal every frontend hands the data plane with a request (an abort marks the
 * request cancelled: dataplane/inference.ts `infer`): one type for HTTP (a closed
 * connection: http/infer.ts; a front-end thread's cancel message: http/threads/pool.ts) and gRPC
 * (a cancelled call or a passed deadline: grpc/cancel.ts).
 */
import type { CancellationSignal } from '../contract/types.js';

/**
 * The data plane's `CancellationSignal` shape without an AbortController per request, fired by
 * {@link ManualSignal.abort}. Listeners run once, in the order they were added; a listener removed
 * while the signal fires still runs if the abort had already begun.
 */
export class ManualSignal implements CancellationSignal {
  aborted = false;
  private listeners: (() => void)[] | undefined;

  /** Fires the listeners once; later calls do nothing. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const ls = this.listeners;
    this.listeners = undefined;
    if (ls) for (const l of ls) l();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }
}

/** A {@link ManualSignal} that aborts when `source` emits `event` (once). */
export function signalOn<E extends string>(source: { once(event: E, listener: () => void): unknown }, event: E): ManualSignal {
  const signal = new ManualSignal();
  source.once(event, () => signal.abort());
  return signal;
}
