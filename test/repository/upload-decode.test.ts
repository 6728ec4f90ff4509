/**
 * Uploads are decoded off the critical path in bounded chunks (repository/overrides.ts; DESIGN
 * "Multi-tenancy": one tenant's upload must not stall other requests): the chunked decoder gives
 * exactly what the one-shot decoder gives (same bytes, same errors), and it yields to the event
 * loop between chunks — other work runs while a 15 MB file is decoded.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DECODE_CHUNK_CHARS, decodeFileOverride, decodeFileOverrideAsync } from '../../host/src/repository/overrides.js';

const decode = (v: unknown) => decodeFileOverrideAsync('file:1/model.wasm', v);

describe('decodeFileOverrideAsync', () => {
  it('decodes as the one-shot decoder does, across chunk boundaries, padding and whitespace', async () => {
    for (const n of [0, 1, 2, 3, 4, 5, 1000, DECODE_CHUNK_CHARS - 1, DECODE_CHUNK_CHARS, (DECODE_CHUNK_CHARS / 4) * 3 + 1, 3 * DECODE_CHUNK_CHARS + 7]) {
      const data = randomBytes(n);
      const text = data.toString('base64');
      const [, got] = await decode(text);
      expect(Buffer.from(got).equals(data), `n=${n}`).toBe(true);
      // with line breaks every 76 characters (MIME), and a few spaces
      const wrapped = text.replace(/(.{76})/g, '$1\r\n') + ' \n';
      expect(Buffer.from((await decode(wrapped))[1]).equals(data), `wrapped n=${n}`).toBe(true);
      expect(Buffer.from(decodeFileOverride('file:1/model.wasm', wrapped)[1]).equals(data)).toBe(true);
    }
  });

  it('refuses what the one-shot decoder refuses, with the same error', async () => {
    const long = 'A'.repeat(DECODE_CHUNK_CHARS + 8);
    for (const bad of ['abc$', 'a', 'abcde', 'ab=c', 'abc===', `${long}=A`, `${long.slice(0, -4)}AA=B`, 'AA==AA==', 42]) {
      let sync: unknown;
      try {
        decodeFileOverride('file:1/model.wasm', bad);
      } catch (e) {
        sync = e;
      }
      expect(sync, String(bad)).toBeDefined();
      await expect(decode(bad)).rejects.toMatchObject({ code: (sync as { code: string }).code, message: (sync as Error).message });
    }
    await expect(decodeFileOverrideAsync('file:../x', 'AAAA')).rejects.toMatchObject({ code: 'INVALID_ARG' });
  });

  it('yields to the event loop between chunks: other work runs during a 15 MB decode', async () => {
    const text = randomBytes(15 * 1024 * 1024).toString('base64');
    let turns = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const [, got] = await decode(text);
    running = false;
    expect(got.length).toBe(15 * 1024 * 1024);
    // one turn per chunk, give or take: the one-shot decoder would allow none
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / DECODE_CHUNK_CHARS) - 2);
  });
});
