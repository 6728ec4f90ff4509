/**
 * The public HTTP port served through the native acceptor (native/src/addon/acceptor.cc): a native
 * thread owns the listening socket, closes every connection over `--http-max-connections` or over
 * `--http-max-connections-per-address` as it accepts it, and only admitted descriptors reach the
 * event loop, where they become sockets of the Fastify app's `node:http` server (DESIGN
 * "Multi-tenancy": one address cannot exhaust the connection budget before it authenticates, nor
 * spend the event loop's time by reopening what was refused).
 *
 * Node's own listener would build a `net.Socket` for every connection before any code could refuse
 * it; here the refused ones cost the event loop nothing. The server is never `listen()`ed: its
 * connection tracking (the one `headersTimeout`, `requestTimeout` and `closeIdleConnections` use)
 * starts from the `listening` event adopted-sockets.ts emits, and {@link NativeListener.close} waits
 * for the adopted sockets itself, since `server.close()` counts only the connections Node accepted.
 */
import type { Server } from 'node:http';
import type { NativeAcceptorHandle, NativeAddon } from '../../platform/addon.js';
import { AdoptedSockets } from './adopted-sockets.js';

export class NativeListener {
  private readonly handle: NativeAcceptorHandle;
  private readonly sockets: AdoptedSockets;
  private closing: Promise<void> | undefined;

  /**
   * Starts accepting on `fd` (a listening socket; owned from here on) for `server`.
   * @param maxOpen connections open at once, ≥ 1 (`--http-max-connections`)
   * @param maxPerAddress connections one client address may hold; 0 = no per-address cap
   * @throws Error (INVALID_ARG) from the addon when `fd` is not a listening socket
   */
  constructor(server: Server, Acceptor: NativeAddon['Acceptor'], fd: number, maxOpen: number, maxPerAddress: number, closeFd: (fd: number) => void) {
    const handle = new Acceptor(fd, maxOpen, maxPerAddress, (batch) => {
      for (let i = 0; i + 1 < batch.length; i += 2) this.sockets.adopt(batch[i]!, batch[i + 1]!);
    });
    this.handle = handle;
    this.sockets = new AdoptedSockets(server, (id) => handle.release(id), closeFd);
  }

  /**
   * Stops accepting (the listening socket is closed at once) and resolves when every adopted
   * connection has closed — what `server.close()` does for the connections Node accepts itself.
   */
  close(): Promise<void> {
    this.closing ??= (this.handle.close(), this.sockets.close());
    return this.closing;
  }
}
