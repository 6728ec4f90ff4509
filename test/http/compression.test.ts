/** The onSend compression step (host/src/frontend/http/compression.ts, spec §1.14). */
import { gunzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { compressReply } from '../../host/src/frontend/http/compression.js';

function fakeReply(): FastifyReply & { headers: Map<string, string> } {
  const headers = new Map<string, string>();
  const reply = {
    headers,
    header: (k: string, v: string) => (headers.set(k.toLowerCase(), v), reply),
    hasHeader: (k: string) => headers.has(k.toLowerCase()),
    removeHeader: (k: string) => (headers.delete(k.toLowerCase()), reply),
  };
  return reply as unknown as FastifyReply & { headers: Map<string, string> };
}
const request = (acceptEncoding?: string) => ({ headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } }) as FastifyRequest;

describe('compressReply', () => {
  it('answers an uncompressed reply synchronously (no promise on the hot path)', () => {
    for (const ae of [undefined, 'identity', 'br']) {
      const reply = fakeReply();
      const out = compressReply(request(ae), reply, '{"a":1}');
      expect(out).toBe('{"a":1}'); // the payload itself, not a promise of it
      expect(reply.headers.get('vary')).toBe('Accept-Encoding');
      expect(reply.headers.has('content-encoding')).toBe(false);
    }
  });

  it('compresses asynchronously when the client prefers gzip', async () => {
    const reply = fakeReply();
    reply.header('content-length', '7');
    const out = compressReply(request('gzip'), reply, '{"a":1}');
    expect(out).toBeInstanceOf(Promise);
    expect(gunzipSync((await out) as Buffer).toString()).toBe('{"a":1}');
    expect(reply.headers.get('content-encoding')).toBe('gzip');
    expect(reply.headers.has('content-length')).toBe(false);
  });

  it('passes non-body payloads (streams, undefined) through untouched', () => {
    const reply = fakeReply();
    expect(compressReply(request('gzip'), reply, undefined)).toBeUndefined();
    expect(reply.headers.size).toBe(0);
  });
});
