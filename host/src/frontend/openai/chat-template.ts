/**
 * Chat templates, as Triton's OpenAI frontend applies them (engine/triton_engine.py: the
 * tokenizer's `apply_chat_template` with `add_generation_prompt`): the model's own template
 * (lifecycle/chat-template.ts finds it in the version folder), rendered with the request's
 * messages by a Jinja implementation (`@huggingface/jinja`, the one Hugging Face's JavaScript
 * tokenizers use) on worker threads, each render bounded in time and memory: a template is code
 * its model's owner wrote (a tenant's, in multi-tenant mode), so it must not hold the event loop
 * or the host's heap (DESIGN "Multi-tenancy").
 */
import { Worker } from 'node:worker_threads';
import type { ServerApi } from '../../dataplane/server-api.js';
import { workerEntry } from '../../threads/worker-entry.js';
import * as errors from './openai.errors.js';
import type { ChatMessage } from './schema.js';
import type { RenderJob, RenderResult } from './template-messages.js';

/** Longest one render may run, ms; past it its worker is terminated and the request gets 503. */
export const RENDER_TIMEOUT_MS = 2000;
/** Workers rendering at once; more renders wait in a queue. */
export const MAX_RENDER_WORKERS = 2;
/** Heap of one render worker, MiB. */
const WORKER_HEAP_MB = 64;

/** A template and the variables its tokenizer config gives it. */
export interface ChatTemplate {
  text: string;
  bosToken: string;
  eosToken: string;
}

/** A special token of tokenizer_config.json: a string, or `{content: string}` (AddedToken). */
function tokenText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return '';
}

/**
 * The template of a model's chat template source: a `chat_template.jinja` as it is; in
 * `tokenizer_config.json`, `chat_template` (a string, or a list of `{name, template}` of which the
 * one named `default` is taken) with its `bos_token` / `eos_token`.
 * @throws TritonError 400 (errors.chatTemplateMissing) when there is none, (errors.chatTemplateFailed) for a config that is not JSON
 */
export function chatTemplateOf(model: string, source: ChatTemplateSource | undefined): ChatTemplate {
  if (!source) throw errors.chatTemplateMissing(model);
  if (source.file === 'chat_template.jinja') return { text: source.text, bosToken: '', eosToken: '' };
  let doc: unknown;
  try {
    doc = JSON.parse(source.text);
  } catch (e) {
    throw errors.chatTemplateFailed(model, `tokenizer_config.json is not JSON: ${(e as Error).message}`);
  }
  const cfg = (typeof doc === 'object' && doc !== null ? doc : {}) as Record<string, unknown>;
  let text: unknown = cfg.chat_template;
  if (Array.isArray(text)) {
    const named = text as { name?: unknown; template?: unknown }[];
    text = (named.find((t) => t?.name === 'default') ?? named[0])?.template;
  }
  if (typeof text !== 'string' || text === '') throw errors.chatTemplateMissing(model);
  return { text, bosToken: tokenText(cfg.bos_token), eosToken: tokenText(cfg.eos_token) };
}

/** What the data plane finds for a model's chat template (lifecycle/chat-template.ts). */
type ChatTemplateSource = Awaited<ReturnType<ServerApi['chatTemplateSource']>>;

interface Job {
  job: RenderJob;
  model: string;
  resolve(text: string): void;
  reject(e: Error): void;
}

interface Slot {
  worker: Worker;
  current?: Job;
  timer?: NodeJS.Timeout;
}

/** The render workers: at most {@link MAX_RENDER_WORKERS}, started on demand, unreferenced while idle. */
export class ChatTemplatePool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private seq = 0;
  private closed = false;

  constructor(
    private readonly timeoutMs = RENDER_TIMEOUT_MS,
    private readonly maxWorkers = MAX_RENDER_WORKERS,
  ) {}

  /**
   * The prompt: `template` rendered with `messages`, `add_generation_prompt: true` and its tokens.
   * @param maxChars a longer prompt is refused
   * @throws TritonError 400 (errors.chatTemplateFailed) when the template fails or runs out of
   *   memory, 503 (errors.chatTemplateOverBudget) past the time bound
   */
  render(model: string, template: ChatTemplate, messages: ChatMessage[], maxChars: number): Promise<string> {
    const context = { messages, add_generation_prompt: true, bos_token: template.bosToken, eos_token: template.eosToken };
    return new Promise<string>((resolve, reject) => {
      if (this.closed) return reject(errors.chatTemplateOverBudget(model, 0));
      this.queue.push({ job: { seq: ++this.seq, template: template.text, context, maxChars }, model, resolve, reject });
      this.pump();
    });
  }

  /** Terminate every worker; queued renders fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const j of this.queue.splice(0)) j.reject(errors.chatTemplateOverBudget(j.model, 0));
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.current);
      if (!slot) {
        if (this.slots.length >= this.maxWorkers) return;
        slot = this.start();
      }
      this.run(slot, this.queue.shift()!);
    }
  }

  private run(slot: Slot, job: Job): void {
    slot.current = job;
    slot.worker.ref();
    slot.timer = setTimeout(() => {
      this.drop(slot);
      job.reject(errors.chatTemplateOverBudget(job.model, this.timeoutMs));
      void slot.worker.terminate();
    }, this.timeoutMs);
    slot.worker.postMessage(job.job);
  }

  private finish(slot: Slot): Job | undefined {
    const job = slot.current;
    clearTimeout(slot.timer);
    slot.current = undefined;
    slot.timer = undefined;
    slot.worker.unref();
    return job;
  }

  private drop(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    queueMicrotask(() => this.pump());
  }

  private start(): Slot {
    const entry = workerEntry(import.meta.url, 'template-worker');
    const worker = new Worker(entry.script, { eval: entry.eval, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref();
    const slot: Slot = { worker };
    this.slots.push(slot);
    worker.on('message', (m: RenderResult) => {
      if (slot.current?.job.seq !== m.seq) return;
      const job = this.finish(slot)!;
      if ('text' in m) job.resolve(m.text);
      else job.reject(errors.chatTemplateFailed(job.model, m.error));
      this.pump();
    });
    const gone = (why: string) => {
      if (!this.slots.includes(slot)) return;
      const job = this.finish(slot);
      this.drop(slot);
      job?.reject(errors.chatTemplateFailed(job.model, why));
    };
    worker.on('error', (e) => gone(e.message));
    worker.on('exit', (code) => gone(`the render worker exited (code ${code})`));
    return slot;
  }
}
