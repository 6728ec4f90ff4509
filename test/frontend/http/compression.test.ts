/** The onSend compression step (host/src/frontend/http/compression.ts, spec §1.14). */
import { gunzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { compressReply } from '../../../host/src/frontend/http/compression.js';
import { request as httpRequest } from 'node:http';
import { perTestServers } from '../../helpers/servers.js';
import { simpleRequest } from '../../helpers/repo.js';

function fakeReply(): FastifyReply & { headers: Map<string, string> } {
  const headers = new Map<string, string>();
  const reply = {
    headers,
    statusCode: 200,
    header: (k: string, v: string) => (headers.set(k.toLowerCase(), v), reply),
    hasHeader: (k: string) => headers.has(k.toLowerCase()),
    removeHeader: (k: string) => (headers.delete(k.toLowerCase()), reply),
  };
  return reply as unknown as FastifyReply & { headers: Map<string, string> };
}
const request = (acceptEncoding?: string) =>
  ({
    headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding },
    routeOptions: { url: '/v2/models/:model_name/infer' },
  }) as unknown as FastifyRequest;

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

/**
 * Which answers are compressed (Triton's http_server.cc compresses only inference and generate
 * responses): metadata, config, statistics, health, the repository index and every error go out
 * as they are whatever `Accept-Encoding` says — `tritonclient.http.aio` reads those bodies with
 * `auto_decompress=False` and would fail to parse a gzip body.
 */
describe('compression scope (end to end)', () => {
  const { repository, serve } = perTestServers();
  const raw = (url: string, init: { method?: string; body?: string } = {}) =>
    request_(url, { method: init.method ?? 'GET', headers: { 'accept-encoding': 'gzip', 'content-type': 'application/json' }, body: init.body });

  it('infer and generate answers are compressed; metadata, config, stats, health, index and errors are not', async () => {
    const server = await serve(repository(['simple']), { loadModels: ['simple'] });
    const u = server.httpUrl;
    const body = JSON.stringify(simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));
    const infer = await raw(`${u}/v2/models/simple/infer`, { method: 'POST', body });
    expect(infer.status).toBe(200);
    expect(infer.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(infer.body).toString()).outputs).toHaveLength(2);
    const plain: [string, string?, string?][] = [
      ['/v2'],
      ['/v2/health/ready'],
      ['/v2/models/simple'],
      ['/v2/models/simple/config'],
      ['/v2/models/simple/stats'],
      ['/v2/repository/index', 'POST', '{}'],
      ['/v2/models/nope/infer', 'POST', body],
      ['/v2/models/simple/infer', 'POST', '{"inputs": 3}'],
    ];
    for (const [path, method, b] of plain) {
      const r = await raw(`${u}${path}`, { method, body: b });
      expect(r.headers['content-encoding'], path).toBeUndefined();
      if (r.body.length > 0) expect(() => JSON.parse(r.body.toString()), path).not.toThrow();
    }
  });
});

/** A raw request whose body is returned as sent (fetch would decompress). */
function request_(
  url: string,
  opts: { method: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
