/**
 * `warden backend upload --url U --token T [--model NAME] [dir]`: loads the project on a server
 * through Triton's model repository extension exactly as tritonclient's `load_model(name,
 * config=..., files=...)` does (spec §3.1, `POST /v2/repository/models/<name>/load` with the
 * parameters `config`, the configuration as JSON text, and `file:1/model.wasm`, the component in
 * base64), with the tenant's token as `Authorization: Bearer <token>` (docs/tenancy.md).
 */
import { existsSync, readFileSync } from 'node:fs';
import { TritonError, type ErrorCode } from '../contract/errors.js';
import { modelConfigToJson, parseModelConfigPbtxt } from '../config/index.js';
import * as err from './kit.errors.js';
import { componentPath, configPath, NAME_RE, type KitProject } from './project.js';

/** Options of {@link uploadProject}. */
export interface UploadOptions {
  /** The server's HTTP endpoint, e.g. `http://localhost:8000` (a bare `host:port` is taken as http). */
  url: string;
  /** The tenant's bearer token (absent: single-user servers take none). */
  token?: string;
  /** The model name to load as; default the project's name. */
  model?: string;
}

/** HTTP status → the Triton error code a client sees (spec §1.2, reversed). */
const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'INVALID_ARG',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  501: 'UNSUPPORTED',
};

/** The load request body tritonclient sends for `load_model(name, config=, files=)`. */
export function loadRequestBody(project: KitProject): { parameters: Record<string, string> } {
  const wasm = componentPath(project.dir);
  if (!existsSync(wasm)) throw err.componentNotBuilt(wasm);
  const config = modelConfigToJson(parseModelConfigPbtxt(readFileSync(configPath(project.dir), 'utf8'), 'config.pbtxt'));
  return { parameters: { config, 'file:1/model.wasm': readFileSync(wasm).toString('base64') } };
}

/** `url` as a base URL without a trailing slash. */
export function baseUrl(url: string): string {
  const withScheme = /^https?:\/\//.test(url) ? url : `http://${url}`;
  return withScheme.replace(/\/+$/, '');
}

/**
 * Uploads and loads the project; resolves to the model name once the server answered 200.
 * @throws TritonError the server's error (its text, the code of its HTTP status), UNAVAILABLE when
 *   it cannot be reached, INVALID_ARG for a bad model name
 */
export async function uploadProject(project: KitProject, opts: UploadOptions): Promise<{ model: string; ms: number }> {
  const model = opts.model ?? project.manifest.name;
  if (!NAME_RE.test(model)) throw err.nameInvalid(model);
  const body = JSON.stringify(loadRequestBody(project));
  const url = `${baseUrl(opts.url)}/v2/repository/models/${encodeURIComponent(model)}/load`;
  const t0 = performance.now();
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}) },
      body,
    });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw err.serverUnreachable(baseUrl(opts.url), cause ?? (e as Error).message);
  }
  const text = await res.text();
  if (res.ok) return { model, ms: performance.now() - t0 };
  throw answerError(res.status, text);
}

/** The server's error answer (`{"error": "..."}` with an HTTP status) as the TritonError a client sees. */
export function answerError(status: number, text: string): TritonError {
  let message: unknown;
  try {
    message = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    message = undefined;
  }
  if (typeof message !== 'string') return err.uploadAnswerMalformed(status, text);
  return new TritonError(STATUS_CODES[status] ?? (status === 401 || status === 403 ? 'UNAVAILABLE' : 'INTERNAL'), message);
}
