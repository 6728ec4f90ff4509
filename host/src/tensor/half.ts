/** IEEE 754 half (FP16) and bfloat16 conversions, for JSON output of FP16/BF16 tensors. */

/** FP16 bits → number. */
export function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** BF16 bits → number (BF16 is the upper half of an FP32). */
export function bf16ToNumber(b: number): number {
  u32[0] = b << 16;
  return f32[0]!;
}
