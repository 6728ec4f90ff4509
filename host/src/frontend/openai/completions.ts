/**
 * `POST /v1/completions` and `POST /v1/chat/completions`: a checked request (schema.ts), its model
 * (models.ts), its prompt (the request's, or the messages through the model's chat template:
 * chat-template.ts), one inference request per choice (io.ts, choices.ts), answered as one JSON
 * object or, with `stream: true`, as server-sent events ending in `data: [DONE]` (sse.ts). The
 * token usage is counted per tenant (`onTokenUsage`: the metrics; the version's statistics). Behaviour follows Triton's OpenAI frontend
 * (engine/triton_engine.py) where OpenAI's API leaves a choice open: the first chat chunk carries
 * the role, `finish_reason` is `length` when the model's reported count reached the bound, the
 * log probabilities a model reports are answered per choice and per chunk (logprobs.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TritonError } from '../../contract/errors.js';
import type { InferenceRequestInit, Principal } from '../../contract/types.js';
import { traceContextFrom } from '../../trace/context.js';
import { ManualSignal } from '../cancellation.js';
import { requestBody } from '../http/body.js';
import type { FrontendContext } from '../http/context.js';
import { connectionSignal } from '../http/infer.js';
import { parseRequestJson } from '../http/json-text.js';
import { type ChatTemplatePool, chatTemplateOf } from './chat-template.js';
import { submitChoices } from './choices.js';
import { openaiTritonErrorAnswer } from './error-shape.js';
import { buildInferenceRequest, echoedByModel, type ResponseText } from './io.js';
import { ChoiceLogprobs } from './logprobs.js';
import { generationTarget } from './models.js';
import * as errors from './openai.errors.js';
import { chatObject, chunkObject, completionObject, finishReason, responseHeader, UsageTally } from './responses.js';
import { type GenerationRequest, parseGenerationRequest } from './schema.js';
import { EventStream } from './sse.js';

/** Token usage of one OpenAI-compatible request, for per-tenant accounting. */
export type TokenUsageSink = (principal: Principal, model: string, promptTokens: number, completionTokens: number) => void;

/** What the completion routes need besides the HTTP frontend's context. */
export interface CompletionDeps {
  ctx: FrontendContext;
  templates: ChatTemplatePool;
  onTokenUsage?: TokenUsageSink;
}

/** A request ready to submit: who, what, and one inference request per choice. */
interface Prepared {
  principal: Principal;
  req: GenerationRequest;
  model: string;
  version: number;
  inits: InferenceRequestInit[];
  /** The prompt, when the frontend echoes it (a model without `exclude_input_in_output`). */
  echo: string;
}

/** The JSON body. @throws TritonError 400 (errors.bodyNotJson) for a body that does not parse */
function bodyJson(ctx: FrontendContext, req: FastifyRequest): unknown {
  const body = requestBody(req, ctx.maxInputSize);
  try {
    return parseRequestJson(body);
  } catch (e) {
    throw errors.bodyNotJson((e as Error).message);
  }
}

async function prepare(deps: CompletionDeps, q: FastifyRequest, kind: 'completion' | 'chat'): Promise<Prepared> {
  const { ctx } = deps;
  const principal = ctx.principalOf(q);
  const req = parseGenerationRequest(bodyJson(ctx, q), kind);
  // The tenant's `max_tokens_per_request` quota (none in single-user mode): a request over it is
  // refused; one that set no bound gets the default, lowered to the quota.
  const cap = ctx.api.tenantConfig(principal)?.quotas.max_tokens_per_request;
  if (cap !== undefined && req.maxTokens > cap) {
    if (req.maxTokensSet) throw errors.maxTokensOverCap(req.maxTokensParam, req.maxTokens, cap);
    req.maxTokens = cap;
    req.sampling.max_tokens = cap;
  }
  const { target, io } = await generationTarget(ctx.api, principal, req.model);
  // Triton's frontend refuses `logprobs` for a model that cannot report them (engine/triton_engine.py).
  if (req.logprobs && !io.logprobs) throw errors.logprobsUnavailable(req.model);
  let prompt: string;
  if (kind === 'chat') {
    const template = chatTemplateOf(req.model, await ctx.api.chatTemplateSource(principal, req.model, target.version));
    prompt = await deps.templates.render(req.model, template, req.messages!, ctx.maxInputSize);
  } else {
    prompt = req.prompt!;
  }
  const trace = traceContextFrom((name) => q.headers[name]);
  const inits = Array.from({ length: req.n }, () => {
    const init = buildInferenceRequest(req, prompt, req.model, target.version, target.config, io);
    init.traceContext = trace;
    return init;
  });
  return { principal, req, model: req.model, version: target.version, inits, echo: req.echo && !echoedByModel(io) ? prompt : '' };
}

/** A signal the client's disconnect fires, and that the handler fires on a failure. */
function requestSignal(reply: FastifyReply): ManualSignal {
  const signal = new ManualSignal();
  connectionSignal(reply.raw).addEventListener('abort', () => signal.abort());
  return signal;
}

/** `POST /v1/completions` (`kind` completion) or `/v1/chat/completions` (`kind` chat). */
export async function handleCompletion(deps: CompletionDeps, q: FastifyRequest, reply: FastifyReply, kind: 'completion' | 'chat'): Promise<unknown> {
  const p = await prepare(deps, q, kind);
  return p.req.stream ? stream(deps, p, reply, kind) : unary(deps, p, reply, kind);
}

/** Count the request's tokens per tenant: in the metrics (`onTokenUsage`) and in the serving version's statistics. */
function account(deps: CompletionDeps, p: Prepared, tally: UsageTally): void {
  const u = tally.usage();
  if (!u) return;
  deps.onTokenUsage?.(p.principal, p.model, u.prompt_tokens, u.completion_tokens);
  deps.ctx.api.recordTokenUsage(p.principal, p.model, p.version, u.prompt_tokens, u.completion_tokens);
}

async function unary(deps: CompletionDeps, p: Prepared, reply: FastifyReply, kind: 'completion' | 'chat'): Promise<FastifyReply> {
  const n = p.inits.length;
  const texts = new Array<string>(n).fill(p.echo);
  const tally = new UsageTally(n);
  const logprobs = logprobsOf(p, kind, p.echo);
  const signal = requestSignal(reply);
  await new Promise<void>((resolve, reject) => {
    let finals = 0;
    let settled = false;
    submitChoices(deps.ctx.api, p.principal, p.model, p.version, p.inits, signal, {
      text(i, r) {
        texts[i] += r.text;
        tally.add(i, r);
        logprobs?.[i]!.add(r.text, r.logprobs);
      },
      final() {
        if (++finals === n) resolve();
      },
      error(_i, e) {
        if (settled) return;
        settled = true;
        signal.abort();
        reject(e);
      },
    });
  });
  account(deps, p, tally);
  const choices = texts.map((text, i) => ({ text, finish: finishReason(tally.completionTokens(i), p.req.maxTokens), logprobs: logprobs?.[i]!.total() }));
  const h = responseHeader(kind, p.model);
  const body = kind === 'chat' ? chatObject(h, choices, tally.usage()) : completionObject(h, choices, tally.usage());
  return reply.code(200).type('application/json').send(JSON.stringify(body));
}

/** One log-probability tally per choice when the request asked for them, else undefined. */
function logprobsOf(p: Prepared, kind: 'completion' | 'chat', prefix: string): ChoiceLogprobs[] | undefined {
  const asked = p.req.logprobs;
  return asked ? p.inits.map(() => new ChoiceLogprobs(kind, asked.top, prefix)) : undefined;
}

async function stream(deps: CompletionDeps, p: Prepared, reply: FastifyReply, kind: 'completion' | 'chat'): Promise<void> {
  const n = p.inits.length;
  const tally = new UsageTally(n);
  const logprobs = logprobsOf(p, kind, '');
  const h = responseHeader(kind, p.model);
  const events = new EventStream(reply);
  const signal = requestSignal(reply);
  // `usage: null` in every chunk but the last with include_usage; absent without it.
  const usageField = p.req.includeUsage ? null : undefined;
  const begun = new Array<boolean>(n).fill(false);
  await new Promise<void>((resolve, reject) => {
    let finals = 0;
    let settled = false;
    const content = (i: number, text: string, tokens?: ResponseText['logprobs']) => {
      // The first chunk of a chat choice carries the role (Triton's frontend sends it first).
      const first = !begun[i];
      begun[i] = true;
      if (first && kind === 'chat') events.send(chunkObject(kind, h, { index: i, role: true, text: '', finish: null }, usageField));
      const t = first ? p.echo + text : text;
      const lp = logprobs ? logprobs[i]!.add(t, tokens) : null;
      if (t !== '' || lp !== null || (first && kind === 'completion'))
        events.send(chunkObject(kind, h, { index: i, text: t, finish: null, logprobs: lp }, usageField));
    };
    const choiceEvents = {
      text(i: number, r: ResponseText) {
        if (settled) return;
        tally.add(i, r);
        content(i, r.text, r.logprobs);
      },
      final(i: number) {
        if (settled) return;
        if (!begun[i]) content(i, '');
        events.send(
          chunkObject(
            kind,
            h,
            { index: i, text: kind === 'chat' ? undefined : '', finish: finishReason(tally.completionTokens(i), p.req.maxTokens) },
            usageField,
          ),
        );
        if (++finals < n) return;
        settled = true;
        if (p.req.includeUsage) events.send(chunkObject(kind, h, undefined, tally.usage()));
        account(deps, p, tally);
        events.done();
        resolve();
      },
      error(_i: number, e: TritonError) {
        if (settled) return;
        settled = true;
        signal.abort();
        account(deps, p, tally);
        if (!events.started) {
          // Nothing streamed yet: a JSON error with its status.
          events.end();
          reject(e);
          return;
        }
        // Mid-stream: OpenAI's error object as an event, then the end of the stream.
        events.send(JSON.parse(openaiTritonErrorAnswer(e).body as string));
        events.done();
        resolve();
      },
    };
    try {
      submitChoices(deps.ctx.api, p.principal, p.model, p.version, p.inits, signal, choiceEvents);
    } catch (e) {
      // A choice was refused (queue full, in-flight quota): the ones before it are cancelled, and
      // nothing of theirs is written; the error is answered as JSON.
      settled = true;
      throw e;
    }
    // The client went away: nothing more is written; the choices are cancelled by the signal.
    signal.addEventListener('abort', () => {
      if (!settled) {
        settled = true;
        account(deps, p, tally);
        events.abandon();
        resolve();
      }
    });
  });
}
