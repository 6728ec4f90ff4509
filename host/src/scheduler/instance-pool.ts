/**
 * Instance selection for one model version: which instance runs the next batch. `execute` is
 * never called concurrently on one instance (spec §6.2); idle instances take work in parallel.
 */
import type { BackendModelInstance } from '../contract/types.js';

/** One instance taken from a pool for one execution; give it back with {@link InstancePool.release}. */
export interface InstanceLease {
  readonly instance: BackendModelInstance;
}

/** The instances a scheduler may dispatch to. */
export interface InstancePool {
  /**
   * Take an idle instance for one execution, a ready one (`isReady` absent or true) first;
   * undefined if none is idle. An idle instance that is not ready is still taken when no ready one
   * is idle: it answers with its own error (as Triton, which asks readiness only for readiness
   * checks), since nothing wakes a request waiting for it to turn ready.
   */
  tryAcquire(): InstanceLease | undefined;
  /**
   * Give back a lease from {@link tryAcquire} (once) and run the callbacks registered with
   * {@link notifyWhenAvailable}.
   */
  release(lease: InstanceLease): void;
  /**
   * Call `callback` once, the next time an instance is released. Registering a callback that is
   * already waiting is a no-op.
   */
  notifyWhenAvailable(callback: () => void): void;
}

interface Slot extends InstanceLease {
  busy: boolean;
}

/** The default pool: the first idle, ready instance in instance-group order, else the first idle one. */
export class IdleInstancePool implements InstancePool {
  private readonly slots: Slot[];
  private waiters: (() => void)[] = [];

  constructor(instances: readonly BackendModelInstance[]) {
    this.slots = instances.map((instance) => ({ instance, busy: false }));
  }

  tryAcquire(): InstanceLease | undefined {
    let fallback: Slot | undefined;
    for (const s of this.slots) {
      if (s.busy) continue;
      if (s.instance.isReady?.() ?? true) {
        s.busy = true;
        return s;
      }
      fallback ??= s;
    }
    if (fallback) fallback.busy = true;
    return fallback;
  }

  release(lease: InstanceLease): void {
    (lease as Slot).busy = false;
    if (this.waiters.length === 0) return;
    const w = this.waiters;
    this.waiters = [];
    for (const cb of w) cb();
  }

  notifyWhenAvailable(callback: () => void): void {
    if (!this.waiters.includes(callback)) this.waiters.push(callback);
  }
}
