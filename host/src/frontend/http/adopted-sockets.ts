/**
 * Connections accepted natively and adopted by the public `node:http` server: the native acceptor's
 * (native-accept.ts) and those the native data path moves to this thread (data-path/, DESIGN "The
 * native data path"). Each descriptor becomes a `net.Socket` as `net.Server` makes the sockets it
 * accepts, joins the server by its `connection` event, and frees its native slot (`release`) once
 * closed; {@link AdoptedSockets.close} waits for them, since `server.close()` counts only the
 * connections Node accepted itself.
 */
import { Socket } from 'node:net';
import type { Server } from 'node:http';

export class AdoptedSockets {
  private readonly open = new Set<Socket>();
  private drained: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  /**
   * @param release frees the native slot of the connection `id` (once, after its socket closed or
   *   could not be made)
   * @param closeFd closes a descriptor no socket could be made of
   */
  constructor(
    private readonly server: Server,
    private readonly release: (id: number) => void,
    private readonly closeFd: (fd: number) => void,
  ) {
    // node:http starts tracking connections (the headers / request timeouts, idle-connection
    // closing) on `listening`; nothing else listens for it on a server that is never listen()ed.
    server.emit('listening');
  }

  /** Makes a socket of `fd` (owned from here on) and hands it to the server. */
  adopt(fd: number, id: number): void {
    if (this.closing) {
      this.closeFd(fd);
      this.release(id);
      return;
    }
    let socket: Socket;
    try {
      // As net.Server makes the sockets it accepts for node:http (which always asks for
      // allowHalfOpen; TCP_NODELAY, its noDelay default, is set on the descriptor natively).
      socket = new Socket({ fd, readable: true, writable: true, allowHalfOpen: true });
    } catch {
      this.closeFd(fd);
      this.release(id);
      return;
    }
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      this.release(id);
      if (this.open.size === 0 && this.drained) this.drained();
    });
    this.server.emit('connection', socket);
  }

  /**
   * Adopts nothing more and resolves when every adopted connection has closed: one that has not
   * sent a byte holds no request and is closed now (node:http counts it neither idle nor expired);
   * the others close as the server's idle-connection closing and their answers end them.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      for (const socket of this.open) if (socket.bytesRead === 0) socket.destroy();
      if (this.open.size === 0) resolve();
      else this.drained = resolve;
    });
    return this.closing;
  }
}
