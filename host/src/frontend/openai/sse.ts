/**
 * The event stream of a streamed completion (OpenAI's server-sent events): `data: <json>` events,
 * the last one `data: [DONE]`. Opened on the first event, so an error met before anything was
 * streamed can still be answered as a JSON error with its status.
 */
import type { FastifyReply } from 'fastify';

export class EventStream {
  private opened = false;
  private ended = false;

  constructor(private readonly reply: FastifyReply) {}

  /** Whether an event was written (the status is then 200). */
  get started(): boolean {
    return this.opened;
  }

  /** Whether the stream ended or the client went away (nothing more is written). */
  get closed(): boolean {
    return this.ended || this.reply.raw.destroyed;
  }

  /** Write one event: `data: <JSON of value>`. */
  send(value: unknown): void {
    this.write(JSON.stringify(value));
  }

  /** Write `data: [DONE]` and end the response. */
  done(): void {
    this.write('[DONE]');
    this.end();
  }

  /** End the response (after an error, without `[DONE]` when nothing was written). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.opened) this.reply.raw.end();
  }

  /**
   * The client went away: end without another event. When nothing was written, the reply is taken
   * from Fastify (hijacked) and its socket closed, so nothing is answered on it.
   */
  abandon(): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.opened) this.reply.hijack();
    this.reply.raw.destroy();
  }

  private write(data: string): void {
    if (this.closed) return;
    if (!this.opened) {
      this.opened = true;
      this.reply.hijack();
      this.reply.raw.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    }
    this.reply.raw.write(`data: ${data}\n\n`);
  }
}
