/** Messages between the chat template pool (chat-template.ts) and its worker (template-worker.ts). */

/** Render `template` with `context` (`messages`, `add_generation_prompt`, ...). */
export interface RenderJob {
  seq: number;
  template: string;
  context: Record<string, unknown>;
  /** A longer prompt is refused. */
  maxChars: number;
}

/** The prompt, or the template engine's error text. */
export type RenderResult = { seq: number; text: string } | { seq: number; error: string };
