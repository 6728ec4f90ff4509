/**
 * The tenant backend kit (`warden backend ...`, host/src/kit/cli.ts) run in-process, its output
 * collected, and projects made and built once per test file: building a TypeScript guest takes
 * componentize-js ~20 s, so each file builds each template once in its `beforeAll`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runBackendCli } from '../../host/src/kit/cli.js';

/** What one `warden backend` run returned and wrote. */
export interface BackendCliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The kit's compile cache for tests (`$XDG_CACHE_HOME/warden-kit`): a folder of the machine's
 * temporary directory, shared by test runs (entries are keyed by the component's SHA-256 and
 * checked on every read), so wasmtime compiles each template once per machine.
 */
export const KIT_CACHE_HOME = join(tmpdir(), 'warden-test-kit-cache');

/** Run `warden backend <argv>`: its exit code and everything it wrote. */
export async function runBackend(...argv: string[]): Promise<BackendCliRun> {
  let stdout = '';
  let stderr = '';
  const saved = process.env.XDG_CACHE_HOME;
  process.env.XDG_CACHE_HOME = KIT_CACHE_HOME;
  try {
    const code = await runBackendCli(argv, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } });
    return { code, stdout, stderr };
  } finally {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
  }
}

/** Run `warden backend <argv>` expecting exit code 0 (else the test fails with its stderr); returns the run. */
export async function backendOk(...argv: string[]): Promise<BackendCliRun> {
  const r = await runBackend(...argv);
  expect(r.code, `warden backend ${argv.join(' ')}\n${r.stderr}`).toBe(0);
  return r;
}

/** A fresh temporary folder, removed by the returned function. */
export function scratch(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The `outputs` of a response `warden backend test` printed (KServe v2 JSON). */
export function printedOutputs(stdout: string): { name: string; datatype: string; shape: number[]; data: number[] }[] {
  return (JSON.parse(stdout) as { outputs: { name: string; datatype: string; shape: number[]; data: number[] }[] }).outputs;
}

/** Float32 softmax of `x` (what the TypeScript template computes). */
export function softmax(x: number[]): number[] {
  const m = Math.max(...x);
  const e = x.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => Math.fround(v / s));
}

/** `(x / 255 - 0.5) / 0.25` (what the C template computes with its default parameters). */
export function normalized(x: number[]): number[] {
  return x.map((v) => Math.fround(Math.fround(v) * Math.fround(1 / (255 * 0.25)) + -0.5 / 0.25));
}
