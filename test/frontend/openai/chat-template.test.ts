/**
 * Chat templates (frontend/openai/chat-template.ts, lifecycle/chat-template.ts): where a model's
 * template is found and how tokenizer_config.json gives it, the confinement of the file read, and
 * rendering on the pool's workers: the messages and the generation prompt, a template that fails
 * (400), one that never ends (503 past the bound, the pool still serving) and one whose prompt is
 * over the size bound.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TritonError } from '../../../host/src/contract/errors.js';
import { chatTemplateSource } from '../../../host/src/lifecycle/chat-template.js';
import type { ModelVersion } from '../../../host/src/lifecycle/model-version.js';
import { ChatTemplatePool, chatTemplateOf } from '../../../host/src/frontend/openai/chat-template.js';
import { OpenAIError } from '../../../host/src/frontend/openai/openai-error.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A model directory with `files` in version 1, and a version object naming it. */
function version(files: Record<string, string>): ModelVersion {
  const dir = mkdtempSync(join(tmpdir(), 'warden-chat-'));
  dirs.push(dir);
  mkdirSync(join(dir, '1'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, '1', name), text);
  return { modelPath: dir, version: 1 } as unknown as ModelVersion;
}

describe('finding the template', () => {
  it('chat_template.jinja first, else tokenizer_config.json; none: undefined', async () => {
    expect(await chatTemplateSource(version({ 'chat_template.jinja': 'J', 'tokenizer_config.json': '{}' }))).toEqual({
      file: 'chat_template.jinja',
      text: 'J',
    });
    expect(await chatTemplateSource(version({ 'tokenizer_config.json': '{"chat_template":"T"}' }))).toEqual({
      file: 'tokenizer_config.json',
      text: '{"chat_template":"T"}',
    });
    expect(await chatTemplateSource(version({ 'model.py': '' }))).toBeUndefined();
  });

  it('a template file that leads outside the model directory is refused', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'warden-secret-'));
    dirs.push(outside);
    writeFileSync(join(outside, 'secret'), 'host secret');
    const v = version({});
    symlinkSync(join(outside, 'secret'), join(v.modelPath!, '1', 'chat_template.jinja'));
    await expect(chatTemplateSource(v)).rejects.toBeInstanceOf(TritonError);
  });

  it("tokenizer_config.json's chat_template: a string, or the `default` of a named list, with its special tokens", () => {
    const src = (doc: unknown) => ({ file: 'tokenizer_config.json' as const, text: JSON.stringify(doc) });
    expect(chatTemplateOf('m', src({ chat_template: 'T', bos_token: '<s>', eos_token: { content: '</s>' } }))).toEqual({
      text: 'T',
      bosToken: '<s>',
      eosToken: '</s>',
    });
    expect(
      chatTemplateOf(
        'm',
        src({
          chat_template: [
            { name: 'tool_use', template: 'X' },
            { name: 'default', template: 'D' },
          ],
        }),
      ).text,
    ).toBe('D');
    for (const none of [undefined, src({}), src({ chat_template: '' })]) {
      expect(() => chatTemplateOf('m', none)).toThrow(/ships no chat template/);
    }
    expect(() => chatTemplateOf('m', { file: 'tokenizer_config.json', text: '{' })).toThrow(/not JSON/);
  });
});

describe('rendering on the pool', () => {
  const pool = new ChatTemplatePool(1500, 1);
  afterAll(() => pool.close());
  const tpl = (text: string) => ({ text, bosToken: '<s>', eosToken: '</s>' });
  const messages = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hi' },
  ];

  it('renders the messages, the special tokens and the generation prompt', async () => {
    const text = "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";
    expect(await pool.render('m', tpl(text), messages, 1000)).toBe('<s>[system]be brief[user]hi[assistant]');
  });

  it("a template that fails is 400 with the engine's reason; raise_exception too", async () => {
    for (const text of ['{% for %}', "{{ raise_exception('only user turns') }}"]) {
      const e = await pool.render('m', tpl(text), messages, 1000).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(OpenAIError);
      expect((e as OpenAIError).code).toBe('INVALID_ARG');
      expect((e as OpenAIError).message).toContain('failed to render');
    }
  });

  it('a template that does not end is stopped past the bound (503); the next render is served', async () => {
    const endless = '{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}';
    const e = await pool.render('m', tpl(endless), messages, 1000).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OpenAIError);
    expect((e as OpenAIError).code).toBe('UNAVAILABLE');
    expect(await pool.render('m', tpl('ok'), messages, 1000)).toBe('ok');
  }, 30_000);

  it('a prompt over the size bound is refused', async () => {
    await expect(pool.render('m', tpl('{% for i in range(100) %}xxxxxxxxxx{% endfor %}'), messages, 500)).rejects.toThrow(/longer than 500 characters/);
  });
});
