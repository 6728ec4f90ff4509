/**
 * The HTTP floor: a bare Fastify server with one route that answers every inference request with
 * a canned response byte-for-byte equal to Warden's for the same request (same body size, same
 * headers). It parses the request body as Fastify would (JSON, or a raw buffer for the binary
 * extension) and does nothing else, so Warden ÷ floor is the share of the bare HTTP stack's
 * throughput Warden keeps.
 *
 * Run as a child process: `node dist/bench/floor.js --port <p> --canned <file.json>` where the
 * file holds `{ json: Canned, binary: Canned }`, `Canned = { headers, bodyBase64 }`.
 * A request carrying `Inference-Header-Content-Length` gets `binary`, any other gets `json`.
 */
import Fastify from 'fastify';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** A recorded HTTP response. */
export interface CannedResponse {
  headers: Record<string, string>;
  bodyBase64: string;
}

export interface CannedSet {
  json: CannedResponse;
  binary: CannedResponse;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { port: { type: 'string' }, canned: { type: 'string' } } });
  if (!values.port || !values.canned) throw new Error('usage: floor.js --port <p> --canned <file.json>');
  const canned = JSON.parse(readFileSync(values.canned, 'utf8')) as CannedSet;
  const bodies = {
    json: { headers: canned.json.headers, body: Buffer.from(canned.json.bodyBase64, 'base64') },
    binary: { headers: canned.binary.headers, body: Buffer.from(canned.binary.bodyBase64, 'base64') },
  };
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.get('/v2/health/ready', async (_req, reply) => reply.code(200).send());
  app.post('/v2/models/:model/infer', async (req, reply) => {
    const r = req.headers['inference-header-content-length'] !== undefined ? bodies.binary : bodies.json;
    return reply.headers(r.headers).send(r.body);
  });
  await app.listen({ port: Number(values.port), host: '127.0.0.1' });
  const close = () => void app.close().then(() => process.exit(0));
  process.on('SIGTERM', close);
  process.on('SIGINT', close);
}

main().catch((e: unknown) => {
  process.stderr.write(`floor: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
