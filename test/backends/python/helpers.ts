/**
 * Shared pieces of the Python backend tests: the interpreter (the project's `.venv`, made by
 * `npm install` / the compatibility suite's `ensureCompatVenv`, with pinned numpy), a temporary
 * repository of Python models, and an in-process inference helper.
 */
import { ensureCompatVenv } from '../../compat/venv.js';
import { inferAndCollect } from '../../../host/src/dataplane/inference.js';
import { emptyRequestInit } from '../../../host/src/dataplane/request-parameters.js';
import { SINGLE_USER, type InferenceRequestInit, type Tensor } from '../../../host/src/contract/types.js';
import type { RunningServer } from '../../../host/src/server.js';
import type { TempRepo } from '../../helpers/repo.js';

/**
 * Make sure `.venv` has numpy. Returns a reason to skip only when PyPI is unreachable and no
 * environment exists (ensureCompatVenv throws on any other failure).
 */
export async function pythonEnvironment(): Promise<string | undefined> {
  const v = await ensureCompatVenv();
  return v.ok ? undefined : v.reason;
}

/** Write `<name>/config.pbtxt` and `<name>/1/model.py`. */
export function pythonModel(repo: TempRepo, name: string, config: string, modelPy: string): void {
  repo.write(`${name}/config.pbtxt`, `name: "${name}"\nbackend: "python"\n${config}`);
  repo.write(`${name}/1/model.py`, modelPy);
}

export { tensor } from '../../helpers/backend-request.js';

/** Infer in-process (the data plane) and collect every response. */
export function infer(s: RunningServer, model: string, inputs: Tensor[], extra: Partial<InferenceRequestInit> = {}) {
  return inferAndCollect(s.api, SINGLE_USER, model, -1, { ...emptyRequestInit(model, -1), inputs, ...extra });
}

/** Elements of an output as numbers (little-endian). */
export function f32(t: Tensor | undefined): number[] {
  if (!t) throw new Error('missing output');
  return [...new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength))];
}
export function i32(t: Tensor | undefined): number[] {
  if (!t) throw new Error('missing output');
  return [...new Int32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength))];
}
