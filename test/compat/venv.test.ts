/**
 * The compat suite's Python environment: `.venv/` with the pinned tritonclient[http,grpc], numpy and kserve,
 * idempotent (a second call only checks, it installs nothing); and the skip rule: the suite may
 * skip only when the package index is unreachable, any other install failure is an error.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureCompatVenv, KSERVE_VERSION, NUMPY_VERSION, TRITONCLIENT_VERSION, VENV_PYTHON } from './venv.js';

const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
});
async function scratchVenv(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'warden-venv-test-'));
  scratch.push(d);
  return join(d, 'venv');
}

describe('compat venv', () => {
  it('holds the pinned tritonclient[http,grpc], numpy and kserve, and a second call is a fast check', async (ctx) => {
    const first = await ensureCompatVenv();
    if (!first.ok) ctx.skip(`tritonclient unavailable: ${first.reason}`);
    expect(first).toEqual({ ok: true, python: VENV_PYTHON, tritonclient: TRITONCLIENT_VERSION, numpy: NUMPY_VERSION, kserve: KSERVE_VERSION });
    const t0 = Date.now();
    const second = await ensureCompatVenv();
    const ms = Date.now() - t0;
    expect(second).toEqual(first);
    expect(ms).toBeLessThan(10_000); // only an import check, no pip run
  }, 600_000);

  it('reports "unreachable" (skip) when the package index cannot be reached', async () => {
    // Port 9 (discard) on loopback refuses connections: the index is unreachable.
    const r = await ensureCompatVenv({
      venvDir: await scratchVenv(),
      env: { PIP_INDEX_URL: 'http://127.0.0.1:9/simple', PIP_FIND_LINKS: '' },
    });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/^PyPI is unreachable \(http:\/\/127\.0\.0\.1:9\/simple\/tritonclient\/: /);
  }, 180_000);

  it('throws (no skip) when pip fails although the index answers', async (ctx) => {
    const first = await ensureCompatVenv();
    if (!first.ok) ctx.skip(`PyPI unreachable, cannot tell a real pip failure apart: ${first.reason}`);
    await expect(ensureCompatVenv({ venvDir: await scratchVenv(), tritonclient: '0.0.1.dev999999' })).rejects.toThrow(
      /pip install tritonclient\[http,grpc\]==0\.0\.1\.dev999999 numpy==.* kserve==.* failed although .* is reachable/,
    );
  }, 180_000);
});
