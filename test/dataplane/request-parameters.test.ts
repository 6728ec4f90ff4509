/**
 * Request parameters and request JSON, protocol-neutrally (spec §1.8, §1.11): integers beyond
 * 2^53 stay exact (correlation ids and int64 parameters), reserved keys of the wrong type get
 * Triton's texts, and a key met twice keeps its first value (rapidjson, as Triton).
 */
import { describe, expect, it } from 'vitest';
import { TritonError } from '../../host/src/contract/errors.js';
import { applyRequestParameter, emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';
import { parseRequestJson } from '../../host/src/frontend/http/json-text.js';

const apply = (key: string, value: unknown) => {
  const init = emptyRequestInit('m', -1);
  applyRequestParameter(init, key, value);
  return init;
};

describe('applyRequestParameter', () => {
  it('keeps an integer sequence_id beyond 2^53 exact, so neighbouring ids stay distinct', () => {
    const a = apply('sequence_id', 9007199254740992n).correlationId;
    const b = apply('sequence_id', 9007199254740993n).correlationId;
    expect(a).toBe(9007199254740992n);
    expect(b).toBe(9007199254740993n);
    expect(apply('sequence_id', 18446744073709551615n).correlationId).toBe(18446744073709551615n);
    expect(apply('sequence_id', 42n).correlationId).toBe(42); // small ids stay numbers (one key per id)
    expect(apply('sequence_id', 42).correlationId).toBe(42);
  });

  it("refuses a sequence_id beyond uint64 with Triton's text (INTERNAL)", () => {
    for (const v of [18446744073709551616n, -1, 1.5, true]) {
      let err: unknown;
      try {
        apply('sequence_id', v);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TritonError);
      expect((err as TritonError).code).toBe('INTERNAL');
      expect((err as TritonError).message).toBe("Unable to parse 'sequence_id': attempt to access JSON non-string as string");
    }
  });

  it('keeps int64 pass-through parameters exact; beyond int64 a double', () => {
    expect(apply('p', 9223372036854775807n).parameters.p).toBe(9223372036854775807n);
    expect(apply('p', -9223372036854775808n).parameters.p).toBe(-9223372036854775808n);
    expect(apply('p', 9223372036854775808n).parameters.p).toBe(9223372036854775808);
  });
});

describe('parseRequestJson', () => {
  it('a duplicate key keeps its first value, on the fast path and the exact one', () => {
    const fast = parseRequestJson(Buffer.from('{"a":[{"x":1,"x":2}],"b":{"y":"s","y":"t"},"a":0}'));
    expect(fast).toEqual({ a: [{ x: 1 }], b: { y: 's' } });
    const exact = parseRequestJson(Buffer.from('{"a":9223372036854775807,"a":1,"c":[{"k":1},{"k":2,"k":3}]}'));
    expect(exact).toEqual({ a: 9223372036854775807n, c: [{ k: 1 }, { k: 2 }] });
  });

  it('reports duplicates to onDuplicateKey, with the enclosing keys', () => {
    const seen: string[] = [];
    parseRequestJson(Buffer.from('{"p":{"q":1,"q":2},"p":3}'), { onDuplicateKey: (k, path) => seen.push([...path, k].join('.')) });
    expect(seen).toEqual(['p.q', 'p']);
  });

  it('colons inside strings are not members', () => {
    expect(parseRequestJson(Buffer.from('{"a:b":"c:d","e":[":"]}'))).toEqual({ 'a:b': 'c:d', e: [':'] });
  });
});
