/**
 * Load requests are parsed off the event loop when large (frontend/http/load-request.ts on a codec
 * worker; DESIGN "Multi-tenancy": one tenant's upload must not stall other requests): the worker
 * gives exactly what the inline parse gives (same overrides, same errors), and the event loop keeps
 * turning while a 15 MB upload body is parsed and decoded.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { CodecPool } from '../../../host/src/frontend/http/codec/pool.js';
import { parseLoadRequest } from '../../../host/src/frontend/http/load-request.js';

const pool = new CodecPool(1);
afterAll(() => pool.close());

const body = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

describe('load request parsing on a codec worker', () => {
  it('gives what the inline parse gives: config, files (with MIME line breaks), and the same errors', async () => {
    const data = randomBytes(100_003);
    const wrapped = data.toString('base64').replace(/(.{76})/g, '$1\r\n');
    const ok = body({
      parameters: { config: '{"backend":"wasm"}', 'file:1/model.wasm': wrapped, 'file:1/labels.txt': Buffer.from('a\nb').toString('base64') },
    });
    const inline = parseLoadRequest('m', ok);
    const off = await pool.parseLoad(Buffer.from(ok), 'm');
    expect(off.configOverride).toEqual({ backend: 'wasm' });
    expect(off.configOverride).toEqual(inline.configOverride);
    expect(off.files.map(([p]) => p)).toEqual(['1/model.wasm', '1/labels.txt']);
    expect(Buffer.from(off.files[0]![1]).equals(data)).toBe(true);
    expect(Buffer.from(off.files[1]![1]).toString()).toBe('a\nb');
    expect(parseLoadRequest('m', Buffer.alloc(0))).toEqual({ configOverride: undefined, files: [], digests: [] });
    // Warden's upload by digest: the path and the digest, lowercase, on the worker as inline
    const hex = 'AB'.repeat(32);
    const named = body({ parameters: { 'file_sha256:1/model.wasm': hex } });
    expect((await pool.parseLoad(Buffer.from(named), 'm')).digests).toEqual([['1/model.wasm', hex.toLowerCase()]]);
    expect(parseLoadRequest('m', named).digests).toEqual([['1/model.wasm', hex.toLowerCase()]]);
    const bad = [
      '{',
      '[]',
      { parameters: 3 },
      { parameters: { config: 3 } },
      { parameters: { config: '{' } },
      { parameters: { 'file:../x': 'AAAA' } },
      { parameters: { 'file:1/m': 'abc$' } },
      { parameters: { 'file:1/m': 42 } },
      { parameters: { 'file_sha256:1/m': 'ab' } },
      { parameters: { 'file_sha256:../m': 'ab'.repeat(32) } },
      { parameters: { other: 'x' } },
    ];
    for (const b of bad) {
      let inlineError: { code: string; message: string } | undefined;
      try {
        parseLoadRequest('m', body(b));
      } catch (e) {
        inlineError = e as { code: string; message: string };
      }
      expect(inlineError, JSON.stringify(b)).toBeDefined();
      await expect(pool.parseLoad(body(b), 'm'), JSON.stringify(b)).rejects.toMatchObject({ code: inlineError!.code, message: inlineError!.message });
    }
  });

  it('the event loop keeps turning while a 15 MB upload body is parsed and decoded', async () => {
    const file = randomBytes(15 * 1024 * 1024);
    const big = body({ parameters: { config: '{}', 'file:1/model.wasm': file.toString('base64') } });
    // The inline parse, for scale: one synchronous step the event loop cannot turn during.
    let turns = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const parts = await pool.parseLoad(big, 'm');
    running = false;
    expect(Buffer.from(parts.files[0]![1]).equals(file)).toBe(true);
    // Tens of milliseconds of parsing and decoding ran on the worker: the loop turned meanwhile
    // (inline it would not have turned once).
    expect(turns).toBeGreaterThan(5);
  });
});
