/**
 * `POST /v2/models/{m}[/versions/{v}]/generate` and `/generate_stream` (spec §3.6): flat JSON
 * requests mapped onto the model's inputs and request parameters; one flat JSON object per
 * response; `generate_stream` answers as server-sent events. Both accept decoupled models.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelConfig } from '../../contract/model-config.js';
import { TritonError, asTritonError } from '../../contract/errors.js';
import { emptyRequestInit, requestParameter } from '../../dataplane/request-parameters.js';
import { type InferenceTarget, inferUnary, releaseTensors } from '../../dataplane/inference.js';
import type { InferenceRequestInit, InferenceResponse, ResponseSender, Tensor } from '../../contract/types.js';
import { tensorDataType } from '../../contract/datatypes.js';
import { tensorDataToJsonElements, jsonToTensorData } from '../../tensor/json.js';
import { isJsonObject, requestBody } from './body.js';
import type { FrontendContext } from './context.js';
import { parseRequestJson } from './json-text.js';
import { connectionSignal } from './infer.js';
import { traceContextFrom } from '../../trace/context.js';
import { tritonErrorAnswer } from './routing.js';
import * as httpErrors from './http.errors.js';

/**
 * Shape for `n` elements from config dims (spec §3.6): fixed dims must divide `n`, the innermost
 * -1 takes the remainder, other -1 dims become 1; a batching model gets a leading batch of 1.
 */
export function generateShape(config: ModelConfig, dims: readonly number[], n: number, name: string): number[] {
  const fixed = dims.reduce((p, d) => (d === -1 ? p : p * d), 1);
  const innermost = dims.lastIndexOf(-1);
  if (innermost < 0 ? fixed !== n : fixed === 0 ? n !== 0 : n % fixed !== 0) {
    throw httpErrors.generateShapeMismatch(n, name, dims);
  }
  const shape = dims.map((d, i) => (d !== -1 ? d : i === innermost ? (fixed === 0 ? 0 : n / fixed) : 1));
  return config.max_batch_size > 0 ? [1, ...shape] : shape;
}

/**
 * Map a generate request body onto inputs and parameters.
 * @param duplicates keys the body gave more than once (top level or in `parameters`): an input
 *   named twice is an error, as Triton's core refuses a second input of the same name.
 * @throws TritonError INVALID_ARG
 */
export function decodeGenerateRequest(
  doc: unknown,
  model: string,
  version: number,
  config: ModelConfig,
  duplicates: ReadonlySet<string> = new Set(),
): InferenceRequestInit {
  if (!isJsonObject(doc)) throw httpErrors.generateNotObject();
  const init = emptyRequestInit(model, version);
  const inputs = new Map(config.input.map((i) => [i.name, i]));
  if (doc.parameters !== undefined) {
    if (inputs.has('parameters')) throw httpErrors.generateParametersIsInput();
    if (!isJsonObject(doc.parameters)) throw httpErrors.generateParametersNotObject();
  }
  if (typeof doc.id === 'string') init.id = doc.id;
  const topLevel = Object.entries(doc).filter(([k]) => k !== 'parameters');
  const entries = [...topLevel, ...Object.entries((doc.parameters as Record<string, unknown> | undefined) ?? {})];
  const added = new Set<string>();
  for (const [n, [key, value]] of entries.entries()) {
    const ci = inputs.get(key);
    if (!ci) {
      init.parameters[key] = requestParameter(key, value);
      continue;
    }
    if (added.has(key) || duplicates.has(key)) {
      throw httpErrors.generateInputRepeated(n >= topLevel.length, init.id, key);
    }
    added.add(key);
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => Array.isArray(v))) throw httpErrors.generateInputNotFlat(key);
    const datatype = tensorDataType(ci);
    const shape = generateShape(config, ci.dims, values.length, key);
    const tensor: Tensor = { name: key, datatype, shape, data: jsonToTensorData(values, datatype, values.length, key) };
    init.inputs.push(tensor);
  }
  return init;
}

/**
 * One response as a flat JSON object; single-element tensors become scalars. Printed directly so
 * 64-bit integers stay exact (non-finite numbers print as null). As Triton's `http_server.cc`
 * (GenerateRequestClass::FinalizeResponse): `id`, `model_name`, `model_version`, then the
 * response parameters, then the outputs go into one map where the first of a name wins, and the
 * fields are written in the map's order (names by byte value).
 */
export function encodeGenerateResponse(model: string, version: number, id: string, r: InferenceResponse): string {
  const fields = new Map<string, string>();
  const add = (k: string, text: string) => {
    if (!fields.has(k)) fields.set(k, text);
  };
  if (id) add('id', JSON.stringify(id));
  add('model_name', JSON.stringify(model));
  add('model_version', JSON.stringify(String(version)));
  for (const [k, v] of Object.entries(r.parameters ?? {})) add(k, JSON.stringify(v) ?? 'null');
  for (const t of r.outputs) {
    if (fields.has(t.name)) continue;
    const elements = tensorDataToJsonElements(t.data, t.datatype, 'null');
    add(t.name, elements.length === 1 ? elements[0]! : `[${elements.join(',')}]`);
  }
  const names = [...fields.keys()].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  return `{${names.map((k) => `${JSON.stringify(k)}:${fields.get(k)!}`).join(',')}}`;
}

/** A generate request's inputs and parameters for the version that serves. @throws TritonError INVALID_ARG */
function decodeFor(ctx: FrontendContext, req: FastifyRequest, model: string, target: InferenceTarget): InferenceRequestInit {
  if (req.headers['content-encoding'] && req.headers['content-encoding'] !== 'identity') {
    throw httpErrors.generateEncodingUnsupported();
  }
  const body = requestBody(req, ctx.maxInputSize);
  const duplicates = new Set<string>();
  const doc = parseRequestJson(body, {
    onDuplicateKey: (key, path) => {
      if (path.length === 0 || (path.length === 1 && path[0] === 'parameters')) duplicates.add(key);
    },
  });
  const init = decodeGenerateRequest(doc, model, target.version, target.config, duplicates);
  init.traceContext = traceContextFrom((name) => req.headers[name]);
  return init;
}

/** `generate` of a model that answers other than once (Triton's http_server.cc text). */
const notOneResponse = httpErrors.generateNotOneResponse;

/** `POST .../generate`: the data plane's unary call (inferUnary; decoupled models too, if they answer once). */
export async function handleGenerate(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string, version: number): Promise<FastifyReply> {
  const text = await inferUnary(
    ctx.api,
    ctx.principalOf(req),
    model,
    version,
    {
      request: (target) => ({ init: decodeFor(ctx, req, model, target) }),
      answer: (response, served, { init }) => encodeGenerateResponse(model, served, init.id, response),
      countError: notOneResponse,
    },
    connectionSignal(reply.raw),
  );
  return reply.code(200).type('application/json').send(text);
}

export async function handleGenerateStream(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string, version: number): Promise<void> {
  const principal = ctx.principalOf(req);
  const target = ctx.api.inferenceTarget(principal, model, version);
  const init = decodeFor(ctx, req, model, target);
  let served = target.version;
  await new Promise<void>((resolve, reject) => {
    let started = false;
    let ended = false;
    // The first response, or error, starts the event stream with its status (Triton
    // http_server.cc GenerateRequestClass::InferResponseComplete: HttpCodeFromError of the first).
    const start = (status = 200): void => {
      if (started) return;
      started = true;
      reply.hijack();
      reply.raw.writeHead(status, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
    };
    const write = (payload: string): void => {
      start();
      reply.raw.write(`data: ${payload}\n\n`);
    };
    const end = (): void => {
      ended = true;
      reply.raw.end();
      resolve();
    };
    const sender: ResponseSender = {
      send(r, final) {
        if (r) {
          if (!ended) write(encodeGenerateResponse(model, served, init.id, r));
          releaseTensors(r.outputs);
        }
        if (final && !ended) {
          start(); // a flags-only final with no responses yields an empty 200 event stream
          end();
        }
      },
      sendError(e: TritonError, final) {
        if (ended) return;
        // An error from the model, even the first response, is an event of the stream (Triton
        // GenerateRequestClass::AddErrorJson); errors before the request is queued are thrown
        // by `infer` and answered as JSON.
        const answer = tritonErrorAnswer(ctx.api.publicError(e));
        start(answer.status);
        write(answer.body as string);
        if (final) end();
      },
    };
    try {
      served = ctx.api.infer(principal, model, target.version, init, sender, connectionSignal(reply.raw)).version;
    } catch (e) {
      reject(asTritonError(e));
    }
  });
}
