// Instance readiness as Triton has it (core backend_model_instance.cc / model.cc: the backend's
// TRITONBACKEND_ModelInstanceReady is asked only by the readiness endpoints; dispatch never waits
// on it, the backend answers each request itself). With Triton's python backend a crashed stub
// makes that hook fail: requests must still be answered, never left waiting; the readiness
// endpoints and the repository index report the backend's reason.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postJson } from '../../helpers/repo.js';
import { faultsModel, nativeServerPerFile } from './helpers.js';

let scratch: string;

const native = nativeServerPerFile((repo) => {
  scratch = mkdtempSync(join(tmpdir(), 'warden-stdio-'));
  faultsModel(repo, 'not_ready', { mode: 'not_ready' }, 2);
  faultsModel(repo, 'ready_echo', { mode: 'echo' });
  faultsModel(repo, 'forks', { mode: 'fork_stdio', fork_out: join(scratch, 'fds') });
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const body = (v: number[]) => ({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [v.length], data: v }] });

/** An inference that must be answered: a request left waiting fails the test instead of hanging it. */
async function infer(model: string, v: number[]): Promise<{ status: number; json: any }> {
  return Promise.race([
    postJson(`${native.url}/v2/models/${model}/infer`, body(v)),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`request to '${model}' was never answered`)), 10_000).unref()),
  ]);
}

describe('TRITONBACKEND_ModelInstanceReady answers readiness checks only', () => {
  it('requests to a model whose instances report not ready are all answered (none waits on them)', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await infer('not_ready', [i, i + 1]);
      expect(r.status).toBe(200);
      expect(r.json.outputs[0].data).toEqual([i, i + 1]);
    }
    const concurrent = await Promise.all([1, 2, 3, 4, 5, 6].map((v) => infer('not_ready', [v])));
    expect(concurrent.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
  });

  it("the readiness endpoint and the repository index report the backend's reason", async () => {
    expect((await fetch(`${native.url}/v2/models/not_ready/ready`)).status).not.toBe(200);
    expect((await fetch(`${native.url}/v2/models/ready_echo/ready`)).status).toBe(200);
    const idx = (await postJson(`${native.url}/v2/repository/index`, {})).json as { name: string; state?: string; reason?: string }[];
    const entry = idx.find((m) => m.name === 'not_ready');
    expect(entry?.reason ?? '').toMatch(/cpp_faults: not ready on purpose/);
  });
});

describe('standard streams of processes a backend starts', () => {
  it("a child forked and exec'd by a backend (as Triton's python backend starts its stub) has fds 0, 1 and 2", async () => {
    // Node opens 0-2 close-on-exec; the backend does not reset them (libtriton_python.so does not).
    expect((await fetch(`${native.url}/v2/models/forks/ready`)).status).toBe(200);
    expect(readFileSync(join(scratch, 'fds'), 'utf8').trim()).toBe('012');
  });
});
