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
 *
 * Per client address (DESIGN "Multi-tenancy": connections are budgeted, so one address cannot
 * exhaust the server's budget before it ever authenticates): with a per-address cap, every
 * listener also counts its connections per address in a count-min sketch in the same shared
 * memory (two rows of {@link SKETCH_WIDTH} counters, each address hashed once per row), and a
 * connection that brings its address's estimate (the smaller of its two counters) over the cap is
 * closed at once. The estimate never undercounts, so an address never holds more than the cap; two
 * addresses overcount only when they collide in both rows, which for the handful of addresses that
 * hold connections at once is improbable. Addresses are keyed by IP; an IPv6 address by its /64
 * (one host usually owns a whole /64), an IPv4-mapped one by its IPv4 address.
 */
import type { Server, Socket } from 'node:net';

/** Counters per sketch row (a power of two). */
export const SKETCH_WIDTH = 1 << 14;
/** Words before the listeners' slots: [0] = the per-address cap (0 = none). */
const HEADER = 1;

export class ConnectionBudget {
  /** The main thread's listener's slot. */
  static readonly MAIN_SLOT = 0;
  /** The listeners' open connections, one slot each. */
  private readonly counts: Int32Array;
  /** The per-address sketch: two rows of {@link SKETCH_WIDTH}. */
  private readonly sketch: Int32Array;
  /** Open connections one address may hold; 0 = no per-address cap. */
  readonly maxPerAddress: number;

  /**
   * @param memory shared by every listener ({@link ConnectionBudget.memory} makes it; it also
   *   carries the per-address cap, so every thread applies the same one)
   * @param max the cap on open connections of all listeners together, ≥ 1
   */
  constructor(
    readonly memory: SharedArrayBuffer,
    readonly max: number,
  ) {
    const words = new Int32Array(memory);
    this.maxPerAddress = Atomics.load(words, 0);
    const slots = words.length - HEADER - 2 * SKETCH_WIDTH;
    this.counts = new Int32Array(memory, 4 * HEADER, slots);
    this.sketch = new Int32Array(memory, 4 * (HEADER + slots), 2 * SKETCH_WIDTH);
  }

  /**
   * Shared memory for the main listener and `threads` front-end threads.
   * @param maxPerAddress open connections one client address may hold (`--http-max-connections-per-address`); 0 = no cap
   */
  static memory(threads: number, maxPerAddress = 0): SharedArrayBuffer {
    const m = new SharedArrayBuffer(4 * (HEADER + threads + 1 + 2 * SKETCH_WIDTH));
    new Int32Array(m)[0] = Math.max(0, Math.floor(maxPerAddress));
    return m;
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
      const address = this.maxPerAddress > 0 ? addressKey(socket.remoteAddress) : undefined;
      if (address !== undefined && !this.admitAddress(address)) {
        this.release(slot);
        socket.destroy();
        return;
      }
      socket.once('close', () => {
        this.release(slot);
        if (address !== undefined) this.releaseAddress(address);
      });
    });
  }

  /**
   * Takes one connection of the client at `address` (an {@link addressKey}); false (nothing
   * taken) when the address already holds `maxPerAddress` connections. Always true without a cap.
   */
  admitAddress(address: string): boolean {
    if (this.maxPerAddress <= 0) return true;
    const [a, b] = cells(address);
    const n = Math.min(Atomics.add(this.sketch, a, 1), Atomics.add(this.sketch, b, 1)) + 1;
    if (n <= this.maxPerAddress) return true;
    Atomics.sub(this.sketch, a, 1);
    Atomics.sub(this.sketch, b, 1);
    return false;
  }

  /** Gives back one connection of `address` taken by {@link admitAddress}. */
  releaseAddress(address: string): void {
    if (this.maxPerAddress <= 0) return;
    const [a, b] = cells(address);
    Atomics.sub(this.sketch, a, 1);
    Atomics.sub(this.sketch, b, 1);
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

/**
 * The key an address is counted under: IPv4 as is (also when IPv4-mapped, `::ffff:a.b.c.d`), IPv6
 * by its first four groups (its /64). Undefined for a socket with no address (already closed).
 */
export function addressKey(remote: string | undefined): string | undefined {
  if (!remote) return undefined;
  if (remote.startsWith('::ffff:') && remote.includes('.')) return remote.slice(7);
  if (!remote.includes(':')) return remote;
  const bare = remote.split('%', 1)[0]!.toLowerCase();
  const [head, tail] = bare.split('::', 2) as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** The address's counter in each sketch row (FNV-1a with two offsets). */
function cells(address: string): [number, number] {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) ^ (h2 >>> 15);
  }
  return [(h1 >>> 0) & (SKETCH_WIDTH - 1), SKETCH_WIDTH + ((h2 >>> 0) & (SKETCH_WIDTH - 1))];
}
