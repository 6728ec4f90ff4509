/**
 * readBody (host/src/frontend/http/body.ts): the callback body reader behind every HTTP request.
 * `done` must be called exactly once, with the whole body or the first error, and a stream error
 * after the end (or after a refusal) must neither call it again nor go unhandled.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readBody } from '../../../host/src/frontend/http/body.js';

function payload(headers: Record<string, string>): PassThrough & IncomingMessage {
  return Object.assign(new PassThrough(), { headers }) as unknown as PassThrough & IncomingMessage;
}

function collect(p: IncomingMessage, max: number): { calls: [Error | null, Buffer | undefined][]; ended: Promise<void> } {
  const calls: [Error | null, Buffer | undefined][] = [];
  let resolve!: () => void;
  const ended = new Promise<void>((r) => (resolve = r));
  readBody(p, max, (e, b) => {
    calls.push([e, b]);
    resolve();
  });
  return { calls, ended };
}

describe('readBody', () => {
  it('joins chunks into one buffer sized by Content-Length, and calls done once', async () => {
    const p = payload({ 'content-length': '6' });
    const r = collect(p, 100);
    p.write('abc');
    p.end('def');
    await r.ended;
    await new Promise((res) => setImmediate(res));
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]![0]).toBeNull();
    expect(r.calls[0]![1]!.toString()).toBe('abcdef');
  });

  it('a chunked body grows past its first buffer and comes back exactly', async () => {
    const p = payload({ 'transfer-encoding': 'chunked' });
    const r = collect(p, 200 * 1024);
    const part = Buffer.alloc(50 * 1024, 7);
    p.write(part);
    p.write(part);
    p.end(Buffer.from('x'));
    await r.ended;
    expect(r.calls[0]![1]!.length).toBe(100 * 1024 + 1);
  });

  it("a declared size over the limit is refused at once with Triton's text", async () => {
    const p = payload({ 'content-length': '11' });
    const r = collect(p, 10);
    await r.ended;
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]![0]!.message).toBe(
      'Request JSON size of 11 bytes exceeds the maximum allowed value of 10 bytes. Use --http-max-input-size to increase the limit.',
    );
  });

  it('a streamed size over the limit is refused once; later data and errors are dropped', async () => {
    const p = payload({ 'transfer-encoding': 'chunked' });
    const r = collect(p, 4);
    p.write('abcdef');
    await r.ended;
    p.write('more');
    p.destroy(new Error('client went away'));
    await new Promise((res) => setImmediate(res));
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]![0]!.message).toContain('exceeds the maximum allowed value of 4 bytes');
  });

  it('a stream error is passed on once; an error after the end calls done no more', async () => {
    const p = payload({ 'content-length': '10' });
    const r = collect(p, 100);
    p.write('abc');
    p.destroy(new Error('reset'));
    await r.ended;
    expect(r.calls).toEqual([[new Error('reset'), undefined]]);

    const q = payload({ 'content-length': '2' });
    const s = collect(q, 100);
    q.end('ok');
    await s.ended;
    q.emit('error', new Error('late'));
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]![1]!.toString()).toBe('ok');
  });
});
