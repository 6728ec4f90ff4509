import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { TritonError, type ErrorCode } from '../../host/src/contract/errors.js';
import type { MessageDesc } from '../../host/src/config/schema.js';

export const FIXTURES = join(import.meta.dirname, 'fixtures');
/** Triton's example models, vendored in the repository (third_party/triton-examples, see its NOTICE.md). */
export const TRITON_EXAMPLES = join(import.meta.dirname, '..', '..', 'third_party', 'triton-examples');

export function fixture(name: string): string {
  return readFileSync(join(FIXTURES, name), 'utf8');
}

/** Run `fn`, expect a TritonError with `code` whose message matches `message`; return the error. */
export function expectTritonError(fn: () => unknown, message: RegExp | string, code: ErrorCode = 'INVALID_ARG'): TritonError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected a TritonError to be thrown').toBeInstanceOf(TritonError);
  const err = caught as TritonError;
  expect(err.code).toBe(code);
  if (typeof message === 'string') expect(err.message).toBe(message);
  else expect(err.message).toMatch(message);
  return err;
}

export async function expectTritonErrorAsync(p: Promise<unknown>, message: RegExp | string, code: ErrorCode = 'INVALID_ARG'): Promise<TritonError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return expectTritonError(
    () => {
      if (err !== undefined) throw err;
    },
    message,
    code,
  );
}

/**
 * Every `Message.field` of the schema that occurs somewhere in `value` (a parsed config), as
 * "MessageName.field" strings.
 */
export function fieldsPresent(value: unknown, desc: MessageDesc, out = new Set<string>()): Set<string> {
  const obj = value as Record<string, unknown>;
  for (const f of desc.fields) {
    const v = obj[f.name];
    if (v === undefined) continue;
    out.add(`${desc.name}.${f.name}`);
    if (f.type.kind !== 'message') continue;
    const sub = f.type.messageType;
    const items = f.mapKey !== undefined ? Object.values(v as object) : f.repeated ? (v as unknown[]) : [v];
    for (const it of items) fieldsPresent(it, sub, out);
  }
  return out;
}
