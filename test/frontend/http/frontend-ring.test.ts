/**
 * The front-end thread ring (frontend/http/threads/ring.ts) and its messages (messages.ts):
 * messages arrive in order across a wake-up; a message longer than a slot and a write to a full
 * or closed ring are refused (the caller then proxies / posts), never grown; a malformed or
 * truncated message is a RangeError, not a read past its end.
 */
import { describe, expect, it } from 'vitest';
import {
  answerBytes,
  readAnswer,
  readRequest,
  requestBytes,
  writeAnswerMessage,
  writeFallback,
  writeRequest,
} from '../../../host/src/frontend/http/threads/messages.js';
import { RING_SLOTS, RingReader, RingWriter, SLOT_PAYLOAD, closeRing, ringMemory } from '../../../host/src/frontend/http/threads/ring.js';
import { sleep } from '../../helpers/wait.js';

describe('ring', () => {
  it('delivers messages in order, including ones written while the reader sleeps', async () => {
    const sab = ringMemory();
    const w = new RingWriter(sab);
    const r = new RingReader(sab);
    const got: string[] = [];
    const done = r.start(
      (m) => got.push(m.toString()),
      (e) => {
        throw e;
      },
    );
    for (let i = 0; i < 5; i++) expect(w.write(3, (b) => b.write(`m${i}`.padEnd(3, '.')))).toBe(true);
    await sleep(20);
    for (let i = 5; i < 8; i++) expect(w.write(3, (b) => b.write(`m${i}`.padEnd(3, '.')))).toBe(true);
    await sleep(20);
    expect(got).toEqual(['m0.', 'm1.', 'm2.', 'm3.', 'm4.', 'm5.', 'm6.', 'm7.']);
    r.close();
    await done;
  });

  it('refuses a message longer than a slot, a full ring and a closed ring', () => {
    const sab = ringMemory();
    const w = new RingWriter(sab);
    expect(w.write(SLOT_PAYLOAD + 1, () => undefined)).toBe(false);
    expect(w.write(-1, () => undefined)).toBe(false);
    for (let i = 0; i < RING_SLOTS; i++) expect(w.write(SLOT_PAYLOAD, (b) => b.fill(1))).toBe(true);
    expect(
      w.write(1, (b) => b.fill(1)),
      'full',
    ).toBe(false);
    closeRing(sab);
    expect(new RingWriter(ringMemory()).write(1, (b) => b.fill(0))).toBe(true);
    expect(
      w.write(1, (b) => b.fill(1)),
      'closed',
    ).toBe(false);
  });
});

describe('ring messages', () => {
  it('a request round-trips; its body is a copy', () => {
    const meta = { id: 7, model: 'simple', version: -1, headerLength: '12', authorization: undefined, clientAddress: '::1' };
    const body = Buffer.from('{"inputs":[]}');
    const n = requestBytes(meta, body.length)!;
    const slot = Buffer.alloc(n);
    writeRequest(slot, meta, body);
    const r = readRequest(slot);
    expect(r).toEqual({ ...meta, body });
    slot.fill(0);
    expect(r.body.toString()).toBe('{"inputs":[]}');
  });

  it('a field over the limit is not encoded (the request is proxied instead)', () => {
    expect(requestBytes({ id: 1, model: 'm', version: 1, headerLength: undefined, authorization: 'x'.repeat(5000), clientAddress: '' }, 0)).toBeUndefined();
  });

  it('an answer and a fallback round-trip', () => {
    const a = { status: 429, headers: { 'retry-after': '1', 'content-type': 'application/json' }, body: '{"error":"ü"}' };
    const slot = Buffer.alloc(answerBytes(a));
    writeAnswerMessage(slot, 9, a);
    const got = readAnswer(slot);
    expect(got.id).toBe(9);
    expect(got.answer!.status).toBe(429);
    expect(got.answer!.headers).toEqual(a.headers);
    expect(got.answer!.body.toString()).toBe(a.body);
    const f = Buffer.alloc(5);
    writeFallback(f, 3);
    expect(readAnswer(f)).toEqual({ id: 3, answer: undefined });
  });

  it('truncated or unknown messages are RangeErrors', () => {
    const meta = { id: 1, model: 'simple', version: 1, headerLength: undefined, authorization: undefined, clientAddress: '' };
    const slot = Buffer.alloc(requestBytes(meta, 100)!);
    writeRequest(slot, meta, Buffer.alloc(100));
    expect(() => readRequest(slot.subarray(0, slot.length - 1))).toThrow(RangeError);
    expect(() => readRequest(Buffer.from([9, 0, 0, 0, 0]))).toThrow(RangeError);
    expect(() => readAnswer(Buffer.from([7, 0, 0, 0, 0]))).toThrow(RangeError);
    expect(() => readAnswer(Buffer.from([1, 0]))).toThrow(RangeError);
  });
});
