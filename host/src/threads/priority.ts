/**
 * Background threads that must yield the CPU to the event loop: on Linux a thread is a task with
 * its own nice value, so a worker can lower its own priority (setpriority on its thread id, read
 * from `/proc/thread-self`). The HTTP codec workers do this, so that one client's 16 MB JSON body
 * being parsed on one core never outbids the event loop serving everyone else for that core; so do
 * the v8 engine's sandbox workers, so that a tenant's guest spinning in `execute` yields the core
 * to the event loop.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Nice value of background threads (0 = normal, 19 = lowest). */
export const BACKGROUND_NICE = 10;

/**
 * Lower the calling thread's priority to `nice`. Call from inside a worker thread.
 * @returns false where the platform has no per-thread priority (non-Linux) or refuses; never throws.
 */
export function lowerThisThreadPriority(nice = BACKGROUND_NICE): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}
