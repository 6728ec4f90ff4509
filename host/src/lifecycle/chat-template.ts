/**
 * The chat template a text-generation model ships, for the OpenAI-compatible API's chat endpoint
 * (frontend/openai/chat-template.ts renders it): `chat_template.jinja` in the serving version's
 * folder, else `tokenizer_config.json` there (its `chat_template` field, as Hugging Face tokenizers
 * keep it). Read through the confinement rule of `repository/model-files.ts` (DESIGN
 * "Multi-tenancy": nothing outside the model directory, regular files only, capped), off the event
 * loop, once per model version.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { readModelFile } from '../repository/model-files.js';
import type { ModelVersion } from './model-version.js';

/** Largest chat template file read, bytes (a tokenizer_config.json with a template is a few KiB). */
export const CHAT_TEMPLATE_MAX_BYTES = 1024 * 1024;

/** The files looked for, in order, in the version folder. */
export const CHAT_TEMPLATE_FILES = ['chat_template.jinja', 'tokenizer_config.json'] as const;

/** A chat template source: which file, and its text (the frontend parses `tokenizer_config.json`). */
export interface ChatTemplateSource {
  file: (typeof CHAT_TEMPLATE_FILES)[number];
  text: string;
}

const cache = new WeakMap<ModelVersion, Promise<ChatTemplateSource | undefined>>();

/**
 * The version's chat template source, or undefined when it ships neither file (or has no model
 * directory). Read once per version; a failed read is not cached.
 * @throws TritonError INVALID_ARG from the confinement rule (a file that leads outside the model
 *   directory, is not a regular file, or is over {@link CHAT_TEMPLATE_MAX_BYTES})
 */
export function chatTemplateSource(mv: ModelVersion): Promise<ChatTemplateSource | undefined> {
  let p = cache.get(mv);
  if (!p) {
    p = read(mv.modelPath, String(mv.version));
    cache.set(mv, p);
    p.catch(() => cache.delete(mv));
  }
  return p;
}

async function read(modelDir: string | undefined, version: string): Promise<ChatTemplateSource | undefined> {
  if (modelDir === undefined) return undefined;
  for (const file of CHAT_TEMPLATE_FILES) {
    const present = await access(join(modelDir, version, file)).then(
      () => true,
      () => false,
    );
    if (!present) continue;
    const bytes = await readModelFile({ modelDir, name: file, under: version, field: 'chat template', maxBytes: CHAT_TEMPLATE_MAX_BYTES });
    return { file, text: bytes.toString('utf8') };
  }
  return undefined;
}
