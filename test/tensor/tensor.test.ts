import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TritonError } from '../../host/src/contract/errors.js';
import { countBytesElements, decodeBytesElements, encodeBytesElements } from '../../host/src/tensor/bytes.js';
import { fromConfigDataType, toConfigDataType, DATATYPES_BY_ENUM, dataTypeByteSize } from '../../host/src/contract/datatypes.js';
import { jsonToTensorData, tensorDataToJsonElements, tensorDataToJsonText, tensorDataToValues } from '../../host/src/tensor/json.js';

describe('BYTES codec', () => {
  it('round-trips arbitrary byte strings', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 20 }), (elems) => {
        const buf = encodeBytesElements(elems);
        expect(countBytesElements(buf)).toBe(elems.length);
        expect(decodeBytesElements(buf).map((e) => [...e])).toEqual(elems.map((e) => [...e]));
      }),
    );
  });
  it('lays out 4-byte little-endian lengths', () => {
    expect([...encodeBytesElements(['ab', ''])]).toEqual([2, 0, 0, 0, 97, 98, 0, 0, 0, 0]);
  });
  it('rejects truncated buffers', () => {
    expect(() => decodeBytesElements(new Uint8Array([5, 0, 0, 0, 1]))).toThrow(/runs past the end/);
    expect(() => countBytesElements(new Uint8Array([5, 0]))).toThrow(/incomplete/);
  });
});

describe('datatypes', () => {
  it('maps config names both ways, TYPE_STRING being BYTES', () => {
    for (const dt of DATATYPES_BY_ENUM) {
      if (dt === 'INVALID') continue;
      expect(fromConfigDataType(toConfigDataType(dt))).toBe(dt);
    }
    expect(toConfigDataType('BYTES')).toBe('TYPE_STRING');
    expect(fromConfigDataType('TYPE_BYTES')).toBeUndefined();
    expect(fromConfigDataType('TYPE_INVALID')).toBeUndefined();
    expect(dataTypeByteSize('BYTES')).toBe(0);
    expect(DATATYPES_BY_ENUM.indexOf('BF16')).toBe(14);
  });
});

describe('JSON tensor data', () => {
  it('accepts nested and flat data and narrows integers with C-cast wrap', () => {
    const nested = jsonToTensorData(
      [
        [1, 2],
        [3, 300],
      ],
      'UINT8',
      4,
      'X',
    );
    expect([...nested]).toEqual([1, 2, 3, 44]);
    const i32 = jsonToTensorData([-1, 2], 'INT32', 2, 'X');
    expect([...new Int32Array(i32.buffer)]).toEqual([-1, 2]);
  });
  it('round-trips every numeric datatype through JSON text', () => {
    const cases: [Parameters<typeof jsonToTensorData>[1], number[]][] = [
      ['INT8', [-128, 127]],
      ['INT16', [-32768, 5]],
      ['INT64', [-(2 ** 53) + 1, 7]],
      ['UINT16', [65535, 0]],
      ['UINT32', [4294967295, 1]],
      ['UINT64', [2 ** 53 - 1, 3]],
      ['FP64', [0.1, -2.5]],
    ];
    for (const [dt, values] of cases) {
      const bytes = jsonToTensorData(values, dt, values.length, 'X');
      expect(JSON.parse(tensorDataToJsonText(bytes, dt))).toEqual(values);
    }
  });
  it('widens FP32 to double as Triton prints it', () => {
    const bytes = jsonToTensorData([0.1], 'FP32', 1, 'X');
    expect(tensorDataToJsonText(bytes, 'FP32')).toBe('[0.10000000149011612]');
  });
  it('keeps 64-bit precision on output', () => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, 18446744073709551615n, true);
    expect(tensorDataToJsonText(b, 'UINT64')).toBe('[18446744073709551615]');
  });
  it('prints an unaligned view (a Buffer subarray: Buffer#slice is a view, not a copy)', () => {
    const backing = Buffer.alloc(1 + 16);
    Buffer.from(Float64Array.of(1.5, -2).buffer).copy(backing, 1);
    expect(tensorDataToJsonText(backing.subarray(1), 'FP64')).toBe('[1.5,-2]');
    expect(tensorDataToJsonText(new Uint8Array(backing.buffer, backing.byteOffset + 1, 16), 'INT64')).toBe(
      `[${new BigInt64Array(Float64Array.of(1.5, -2).buffer).join(',')}]`,
    );
  });
  it('handles BOOL and BYTES', () => {
    const b = jsonToTensorData([true, false], 'BOOL', 2, 'X');
    expect(tensorDataToJsonText(b, 'BOOL')).toBe('[true,false]');
    const s = jsonToTensorData(['hé', 'NaN'], 'BYTES', 2, 'X');
    expect(tensorDataToValues(s, 'BYTES')).toEqual(['hé', 'NaN']);
  });
  it('rejects wrong element types as INTERNAL (Triton JSON layer) and FP16 JSON as INVALID_ARG', () => {
    const expectCode = (f: () => unknown, code: string, re: RegExp) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(TritonError);
        expect((e as TritonError).code).toBe(code);
        expect((e as Error).message).toMatch(re);
        return;
      }
      throw new Error('did not throw');
    };
    expectCode(() => jsonToTensorData([1.5], 'INT32', 1, 'X'), 'INTERNAL', /non-signed-integer/);
    expectCode(() => jsonToTensorData([-1], 'UINT8', 1, 'X'), 'INTERNAL', /non-unsigned-integer/);
    expectCode(() => jsonToTensorData([1], 'BOOL', 1, 'X'), 'INTERNAL', /non-boolean/);
    expectCode(() => jsonToTensorData([1], 'BYTES', 1, 'X'), 'INTERNAL', /non-string/);
    expectCode(() => jsonToTensorData([1, 2], 'INT32', 3, 'X'), 'INTERNAL', /Shape does not match/);
    expectCode(() => jsonToTensorData([1], 'FP16', 1, 'IN'), 'INVALID_ARG', /FP16 data via JSON is not supported.*input IN/);
  });
  it('prints FP16 and BF16 outputs as numbers', () => {
    const h = new Uint8Array([0x00, 0x3c, 0x00, 0xc0]); // 1.0, -2.0 in FP16
    expect(tensorDataToJsonText(h, 'FP16')).toBe('[1,-2]');
    const bf = new Uint8Array([0x80, 0x3f]); // 1.0 in BF16
    expect(tensorDataToJsonText(bf, 'BF16')).toBe('[1]');
  });
});

describe('tensorDataToJsonText: the typed-array join prints what the per-element path prints', () => {
  const fixed = ['INT8', 'UINT8', 'INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64', 'FP32', 'FP64', 'FP16', 'BF16', 'BOOL'] as const;
  it.each(fixed)('%s, random bytes at aligned and unaligned offsets, and the extremes', (dt) => {
    const size = dataTypeByteSize(dt);
    const n = 257;
    const backing = new Uint8Array(n * size + 8);
    for (let i = 0; i < backing.length; i++) backing[i] = (i * 2654435761) >>> 24;
    for (const off of [0, 1, 3, size]) {
      const data = backing.subarray(off, off + n * size);
      expect(tensorDataToJsonText(data, dt)).toBe(`[${tensorDataToJsonElements(data, dt).join(',')}]`);
    }
    const extremes = new Uint8Array(4 * size);
    extremes.fill(0xff, 0, size); // -1, max unsigned, NaN
    extremes.fill(0x80, size, 2 * size); // most negative, -0-ish patterns
    extremes[3 * size - 1] = 0x80; // sign bit only: -0 for floats, minimum for signed integers
    expect(tensorDataToJsonText(extremes, dt)).toBe(`[${tensorDataToJsonElements(extremes, dt).join(',')}]`);
  });
  it('NaN, ±Infinity and -0 print as Triton writes them', () => {
    expect(tensorDataToJsonText(new Uint8Array(new Float32Array([NaN, Infinity, -Infinity, -0, 1.5]).buffer), 'FP32')).toBe('[NaN,Infinity,-Infinity,0,1.5]');
    expect(tensorDataToJsonText(new Uint8Array(new BigInt64Array([-(1n << 63n), (1n << 63n) - 1n]).buffer), 'INT64')).toBe(
      '[-9223372036854775808,9223372036854775807]',
    );
  });
});

describe('jsonToTensorData: flat data is read in place, nested data flattened', () => {
  it('flat, nested, mixed, ragged and a bare scalar give the same row-major bytes; the input is left as it was', () => {
    const want = new Uint8Array(new Int32Array([1, 2, 3, 4]).buffer);
    const flat = [1, 2, 3, 4];
    expect(jsonToTensorData(flat, 'INT32', 4, 'X')).toEqual(want);
    expect(flat).toEqual([1, 2, 3, 4]);
    expect(
      jsonToTensorData(
        [
          [1, 2],
          [3, 4],
        ],
        'INT32',
        4,
        'X',
      ),
    ).toEqual(want);
    expect(jsonToTensorData([1, [2, 3], 4], 'INT32', 4, 'X')).toEqual(want);
    expect(jsonToTensorData([[1], [2, [3, 4]]], 'INT32', 4, 'X')).toEqual(want);
    expect(jsonToTensorData(7, 'INT32', 1, 'X')).toEqual(new Uint8Array(new Int32Array([7]).buffer));
    for (const short of [
      [1, [2, 3]],
      [1, 2, 3],
    ]) {
      expect(() => jsonToTensorData(short, 'INT32', 4, 'X')).toThrow("Unable to parse 'data': Shape does not match true shape of 'data' field");
    }
  });
});
