/**
 * `--http-max-connections` across every listener of the public port. With front-end threads
 * (`--http-threads`) the main thread's Fastify and each thread run their own `node:http` server on
 * one SO_REUSEPORT port, and Node's `server.maxConnections` counts one server's connections only:
 * the cap would be multiplied by the number of listeners. Here each listener counts its open
 * connections in its own slot of a shared Int32Array (slot 0: the main listener; slot i + 1:
 * thread i), and a new connection that brings the sum over the cap is closed at once.
 *
 * Two listeners accepting at the cap at the same moment may both refuse (each sees the other's
 * increment): the cap is never exceeded, and at worst one connection fewer is accepted while the
 * race lasts. A thread that dies takes its connections with it; its slot is reset to 0 before it
 * is started again.
 */
import type { Server, Socket } from 'node:net';

export class ConnectionBudget {
  /** The main thread's listener's slot. */
  static readonly MAIN_SLOT = 0;
  private readonly counts: Int32Array;

  /**
   * @param memory shared by every listener ({@link ConnectionBudget.memory} makes it)
   * @param max the cap on open connections of all listeners together, ≥ 1
   */
  constructor(
    readonly memory: SharedArrayBuffer,
    readonly max: number,
  ) {
    this.counts = new Int32Array(memory);
  }

  /** Shared memory for the main listener and `threads` front-end threads. */
  static memory(threads: number): SharedArrayBuffer {
    return new SharedArrayBuffer(4 * (threads + 1));
  }

  /** Front-end thread `index`'s slot. */
  static threadSlot(index: number): number {
    return index + 1;
  }

  /**
   * Counts `server`'s connections in `slot` and closes any that would bring the total over the
   * cap, before the HTTP server sees it (the listener runs first).
   */
  attach(server: Server, slot: number): void {
    server.prependListener('connection', (socket: Socket) => {
      if (!this.admit(slot)) {
        socket.destroy();
        return;
      }
      socket.once('close', () => this.release(slot));
    });
  }

  /** Takes one connection in `slot`; false (nothing taken) if the total would exceed the cap. */
  admit(slot: number): boolean {
    Atomics.add(this.counts, slot, 1);
    if (this.open() <= this.max) return true;
    Atomics.sub(this.counts, slot, 1);
    return false;
  }

  /** Gives back one connection of `slot`. */
  release(slot: number): void {
    Atomics.sub(this.counts, slot, 1);
  }

  /** A dead thread's connections are gone: its slot starts again from 0. */
  reset(slot: number): void {
    Atomics.store(this.counts, slot, 0);
  }

  /** Open connections of all listeners. */
  open(): number {
    let n = 0;
    for (let i = 0; i < this.counts.length; i++) n += Atomics.load(this.counts, i);
    return n;
  }
}
