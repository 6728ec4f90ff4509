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
 * starts from the `listening` event this module emits, and {@link NativeListener.close} waits for
 * the adopted sockets itself, since `server.close()` counts only the connections Node accepted.
 */
import { Socket } from 'node:net';
import type { Server } from 'node:http';
import type { NativeAcceptorHandle, NativeAddon } from '../../platform/addon.js';

export class NativeListener {
  private readonly handle: NativeAcceptorHandle;
  private readonly open = new Set<Socket>();
  private drained: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  /**
   * Starts accepting on `fd` (a listening socket; owned from here on) for `server`.
   * @param maxOpen connections open at once, ≥ 1 (`--http-max-connections`)
   * @param maxPerAddress connections one client address may hold; 0 = no per-address cap
   * @throws Error (INVALID_ARG) from the addon when `fd` is not a listening socket
   */
  constructor(
    private readonly server: Server,
    Acceptor: NativeAddon['Acceptor'],
    fd: number,
    maxOpen: number,
    maxPerAddress: number,
    private readonly closeFd: (fd: number) => void,
  ) {
    this.handle = new Acceptor(fd, maxOpen, maxPerAddress, (batch) => this.adopt(batch));
    // node:http starts tracking connections (the headers / request timeouts, idle-connection
    // closing) on `listening`; nothing else listens for it on a server that is never listen()ed.
    server.emit('listening');
  }

  /**
   * Stops accepting (the listening socket is closed at once) and resolves when every adopted
   * connection has closed — what `server.close()` does for the connections Node accepts itself.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.handle.close();
      // A connection that has not sent a byte holds no request: close it now rather than let it
      // hold the shutdown until the exit timeout (node:http counts it neither idle nor expired).
      for (const socket of this.open) if (socket.bytesRead === 0) socket.destroy();
      if (this.open.size === 0) resolve();
      else this.drained = resolve;
    });
    return this.closing;
  }

  private adopt(batch: number[]): void {
    for (let i = 0; i + 1 < batch.length; i += 2) {
      const fd = batch[i]!;
      const id = batch[i + 1]!;
      let socket: Socket;
      try {
        // As net.Server makes the sockets it accepts for node:http (which always asks for
        // allowHalfOpen; TCP_NODELAY, its noDelay default, is set on the descriptor natively).
        socket = new Socket({ fd, readable: true, writable: true, allowHalfOpen: true });
      } catch {
        this.closeFd(fd);
        this.handle.release(id);
        continue;
      }
      this.open.add(socket);
      socket.once('close', () => {
        this.open.delete(socket);
        this.handle.release(id);
        if (this.open.size === 0 && this.drained) this.drained();
      });
      this.server.emit('connection', socket);
    }
  }
}
