/**
 * The worker thread that renders chat templates (chat-template.ts): a model's template is code its
 * owner wrote (a tenant's, in multi-tenant mode), so it runs here, off the event loop, under the
 * pool's time bound and this thread's heap bound, never on the thread that serves requests.
 * Compiled templates are kept per text (a small LRU).
 */
import { parentPort } from 'node:worker_threads';
import { Template } from '@huggingface/jinja';
import type { RenderJob, RenderResult } from './template-messages.js';

const compiled = new Map<string, Template>();
const MAX_COMPILED = 32;

function templateOf(text: string): Template {
  let t = compiled.get(text);
  if (t) {
    compiled.delete(text);
  } else {
    t = new Template(text);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  }
  compiled.set(text, t);
  return t;
}

parentPort!.on('message', (job: RenderJob) => {
  let result: RenderResult;
  try {
    const text = templateOf(job.template).render(job.context);
    result = text.length > job.maxChars ? { seq: job.seq, error: `the rendered prompt is longer than ${job.maxChars} characters` } : { seq: job.seq, text };
  } catch (e) {
    result = { seq: job.seq, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(result);
});
