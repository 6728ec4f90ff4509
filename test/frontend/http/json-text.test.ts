/**
 * UTF-16 surrogate escapes in request JSON, read as Triton's parser reads them (TritonJson over
 * rapidjson, common triton_json.h: `kParseNanAndInfFlag` only, no encoding validation). rapidjson's
 * string reader (`ParseStringToStream`) refuses a `\uD800`–`\uDBFF` escape that is not followed by
 * a `\uDC00`–`\uDFFF` escape ("The surrogate pair in string is invalid.", and "Incorrect hex digit
 * after \u escape in string." when the second escape's hex is bad), both at the byte offset of the
 * FIRST escape's backslash; a lone `\uDC00`–`\uDFFF` escape is accepted and stored as its 3-byte
 * form (`ED B0 80` for `\udc00`). Every expected text below is what tritonserver 2.51 (the pinned
 * wheel) answered for the same body; test/backends/native/triton-differential.test.ts compares the two
 * servers directly where the wheel runs.
 */
import { describe, expect, it } from 'vitest';
import { parseRequestJson } from '../../../host/src/frontend/http/json-text.js';
import { jsonToTensorData } from '../../../host/src/tensor/json.js';
import { decodeBytesElements, encodeBytesElements } from '../../../host/src/tensor/bytes.js';

const SURROGATE = 'The surrogate pair in string is invalid.';
const HEX = 'Incorrect hex digit after \\u escape in string.';

/** Body → [rapidjson's message, byte offset] as tritonserver 2.51 reported it. */
const REFUSED: [string, string, number][] = [
  ['{"a":"\\ud800"}', SURROGATE, 6],
  ['{"a":"\\uDBFF"}', SURROGATE, 6],
  ['{"a":"\\ud800\\u0041"}', SURROGATE, 6],
  ['{"a":"\\ud800x"}', SURROGATE, 6],
  ['{"a":"\\ud800\\ud800"}', SURROGATE, 6],
  ['{"a":"\\ud800\\"}', SURROGATE, 6],
  ['{"a":"\\ud800\\n"}', SURROGATE, 6],
  ['{"a":"\\ud800\\u12G4"}', HEX, 6],
  ['{"a":"\\ud800\\udc0"}', HEX, 6],
  ['{"a":"\\ud800', SURROGATE, 6],
  ['{"a":"\\ud800\\u', HEX, 6],
  ['{"\\ud800":1}', SURROGATE, 2],
  ['{"a":"\\udc00\\ud800"}', SURROGATE, 12],
  ['{"b":"\\ud800","a":tru}', SURROGATE, 6],
  ['{"é":"\\ud800"}', SURROGATE, 7],
  ['{"inputs":[{"name":"\\ud800","datatype":"FP32","shape":[1],"data":[1]}]}', SURROGATE, 20],
];

/** The three ways a body is parsed: V8's JSON.parse after the byte scan, the exact parser forced by a long integer, and the exact parser of `/generate` (duplicate keys reported). */
const PATHS: [string, (body: string) => unknown][] = [
  ['fast path', (b) => parseRequestJson(Buffer.from(b))],
  ['exact parser (a 20-digit integer elsewhere)', (b) => parseRequestJson(Buffer.from(b.replace(/^\{/, '{"n":12345678901234567890,')))],
  ['exact parser (/generate)', (b) => parseRequestJson(Buffer.from(b), { onDuplicateKey: () => undefined })],
];

describe('request JSON: a lone high surrogate escape is refused as rapidjson refuses it', () => {
  for (const [path, parse] of PATHS) {
    it.each(REFUSED)(`${path}: %s`, (body, message, offset) => {
      // The 20-digit integer prefix moves the offset by its own length.
      const shift = path.startsWith('exact parser (a') ? '"n":12345678901234567890,'.length : 0;
      let err: unknown;
      try {
        parse(body);
      } catch (e) {
        err = e;
      }
      expect(err, body).toMatchObject({ code: 'INTERNAL', message: `failed to parse the request JSON buffer: ${message} at ${offset + shift}` });
    });
  }

  it('an earlier error is reported first, as rapidjson stops at it', () => {
    expect(() => parseRequestJson(Buffer.from('{"a":tru,"b":"\\ud800"}'))).toThrow('failed to parse the request JSON buffer: Invalid value. at 8');
  });
});

describe('request JSON: valid pairs and lone low surrogates are accepted, as by rapidjson', () => {
  for (const [path, parse] of PATHS) {
    it(`${path}`, () => {
      const v = parse('{"a":"\\ud83d\\ude00","b":"\\udc00","c":"x\\udfff","d":"\\uDBFF\\uDFFF","e":"\\udc00\\udc00","\\ud83d\\ude00":1}') as Record<
        string,
        unknown
      >;
      expect(v.a).toBe('😀');
      expect(v.b).toBe('\udc00');
      expect(v.c).toBe('x\udfff');
      expect(v.d).toBe('\u{10ffff}');
      expect(v.e).toBe('\udc00\udc00');
      expect(v['😀']).toBe(1);
    });
  }

  it('escaped backslashes before a "u" are not escapes', () => {
    expect(parseRequestJson(Buffer.from('{"a":"\\\\ud800"}'))).toEqual({ a: '\\ud800' });
  });
});

describe('BYTES data: a lone low surrogate escape becomes the bytes rapidjson stores', () => {
  it('"\\udc00" is ED B0 80 (tritonserver 2.51 echoed these bytes), a valid pair is its UTF-8', () => {
    const doc = parseRequestJson(Buffer.from('{"data":["\\udc00","a\\ud83d\\ude00","x\\udfffy","é"]}')) as { data: string[] };
    const data = jsonToTensorData(doc.data, 'BYTES', 4, 'INPUT0');
    expect(decodeBytesElements(data).map((e) => Buffer.from(e).toString('hex'))).toEqual(['edb080', '61f09f9880', '78edbfbf79', 'c3a9']);
  });

  it('well-formed strings are encoded as plain UTF-8', () => {
    const elements = ['', 'abc', 'é😀\u{10ffff}'];
    expect(Buffer.from(encodeBytesElements(elements))).toEqual(
      Buffer.concat(
        elements.map((e) => {
          const b = Buffer.from(e, 'utf8');
          const len = Buffer.alloc(4);
          len.writeUInt32LE(b.length);
          return Buffer.concat([len, b]);
        }),
      ),
    );
  });
});
