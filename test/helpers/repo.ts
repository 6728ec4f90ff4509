/** Temporary model repositories for tests, built from Triton's example models. */
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Triton's example models, vendored in the repository (see third_party/triton-examples/NOTICE.md). */
export const EXAMPLES = join(PROJECT_ROOT, 'third_party', 'triton-examples');

export interface TempRepo {
  path: string;
  /** Copy an example model in (optionally under another name). */
  addExample(model: string, as?: string): string;
  /** Write a file relative to the repository. */
  write(rel: string, content: string | Uint8Array): void;
  /** Write a model: `<name>/config.pbtxt` holding `config`, and version 1 as an empty folder (its `.keep` file). */
  addModel(name: string, config: string): void;
  remove(rel: string): void;
  cleanup(): void;
}

export function tempRepo(examples: string[] = []): TempRepo {
  const path = mkdtempSync(join(tmpdir(), 'warden-repo-'));
  const repo: TempRepo = {
    path,
    addExample(model, as = model) {
      const dst = join(path, as);
      cpSync(join(EXAMPLES, model), dst, { recursive: true });
      return dst;
    },
    write(rel, content) {
      const p = join(path, rel);
      mkdirSync(join(p, '..'), { recursive: true });
      writeFileSync(p, content);
    },
    addModel(name, config) {
      repo.write(`${name}/config.pbtxt`, config);
      repo.write(`${name}/1/.keep`, '');
    },
    remove(rel) {
      rmSync(join(path, rel), { recursive: true, force: true });
    },
    cleanup() {
      rmSync(path, { recursive: true, force: true });
    },
  };
  for (const m of examples) repo.addExample(m);
  return repo;
}

/** The model metadata (spec §3.3) of Triton's example `simple` as served from its repository. */
export const SIMPLE_METADATA = Object.freeze({
  name: 'simple',
  versions: ['1'],
  platform: 'onnxruntime_onnx',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] },
    { name: 'INPUT1', datatype: 'INT32', shape: [-1, 16] },
  ],
  outputs: [
    { name: 'OUTPUT0', datatype: 'INT32', shape: [-1, 16] },
    { name: 'OUTPUT1', datatype: 'INT32', shape: [-1, 16] },
  ],
});

/**
 * Add `bad_sequence` to `repo`: Triton's `simple_sequence` whose START control lists three
 * `int32_false_true` values instead of two, a config that fails validation (the model is UNAVAILABLE).
 */
export function addBadSequence(repo: TempRepo): void {
  repo.addExample('simple_sequence', 'bad_sequence');
  repo.write(
    'bad_sequence/config.pbtxt',
    readFileSync(join(EXAMPLES, 'simple_sequence/config.pbtxt'), 'utf8')
      .replace('name: "simple_sequence"', 'name: "bad_sequence"')
      .replace('int32_false_true: [ 0, 1 ]', 'int32_false_true: [ 0, 1, 2 ]'),
  );
}

/** JSON body for `simple`-style models: INPUT0, INPUT1 of `rows` x 16. */
export function simpleRequest(datatype: string, input0: unknown[], input1: unknown[], rows = 1, extra: Record<string, unknown> = {}) {
  return {
    inputs: [
      { name: 'INPUT0', datatype, shape: [rows, 16], data: input0 },
      { name: 'INPUT1', datatype, shape: [rows, 16], data: input1 },
    ],
    ...extra,
  };
}

/** `text` parsed as JSON, or undefined when it is not JSON (error bodies, empty bodies). */
export function parseJsonOrUndefined(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** fetch, returning status, body text, the body parsed as JSON (or undefined) and the headers. */
export async function fetchJson(url: string, init?: RequestInit): Promise<{ status: number; json: any; text: string; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, json: parseJsonOrUndefined(text), text, headers: res.headers };
}

/** POST JSON, returning status and parsed body (or text). */
export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any; text: string; headers: Headers }> {
  return fetchJson(url, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

export function getJson(url: string): Promise<{ status: number; json: any; text: string }> {
  return fetchJson(url);
}

/**
 * `method` `url` as the holder of `token` (a bearer token; undefined: no authorization header),
 * `body` as JSON (a string is sent as it is): as {@link fetchJson}.
 */
export function fetchAs(
  token: string | undefined,
  method: 'GET' | 'POST',
  url: string,
  body?: unknown,
): Promise<{ status: number; json: any; text: string; headers: Headers }> {
  return fetchJson(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * POST `body` to `<url>/v2/models/<model>/generate_stream` (spec §3.6) and read the whole stream:
 * the status and every server-sent `data:` event, parsed as JSON.
 */
export async function generateStream(url: string, model: string, body: unknown): Promise<{ status: number; events: Record<string, unknown>[] }> {
  const res = await fetch(`${url}/v2/models/${model}/generate_stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, events: sseEvents(await res.text()) };
}

/** Every `data:` event of a server-sent event stream's text (spec §3.6), parsed as JSON. */
export function sseEvents(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice('data: '.length)) as Record<string, unknown>);
}

/** The inputs and outputs of Triton's add_sub models in a JSON config: INPUT0, INPUT1 in, OUTPUT0, OUTPUT1 out, FP32 [`dims`]. */
export const addSubIo = (dims: number) =>
  ({
    input: [
      { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [dims] },
      { name: 'INPUT1', data_type: 'TYPE_FP32', dims: [dims] },
    ],
    output: [
      { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [dims] },
      { name: 'OUTPUT1', data_type: 'TYPE_FP32', dims: [dims] },
    ],
  }) as const;

/** The `parameters.config` of an upload of Triton's `addsub_onnx` (FP32 [16] in, FP32 [16] out, no batching). */
export const ADDSUB_CONFIG = { platform: 'onnxruntime_onnx', max_batch_size: 0, ...addSubIo(16) } as const;

/** `addsub_onnx`'s model.onnx, base64 (what a load API upload carries). */
export const addsubModelBase64 = (): string => readFileSync(join(EXAMPLES, 'addsub_onnx/1/model.onnx')).toString('base64');

/** A TCP port free on 127.0.0.1 right now (for a server started in a child process). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
