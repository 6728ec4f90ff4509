/**
 * `wasi:random/{random,insecure,insecure-seed}` for sandboxed backends: all three are the host's
 * CSPRNG (`crypto.randomFillSync`); one call hands out at most {@link MAX_RANDOM_BYTES}.
 */
import { randomFillSync } from 'node:crypto';

/** Largest random buffer handed out by one call (bytes); the guest must ask again for more. */
export const MAX_RANDOM_BYTES = 1 << 20;

/** `get-random-bytes(len)`: `min(len, MAX_RANDOM_BYTES)` random bytes. */
export function randomBytes(len: bigint): Uint8Array {
  const n = Number(len > BigInt(MAX_RANDOM_BYTES) ? BigInt(MAX_RANDOM_BYTES) : len);
  return randomFillSync(new Uint8Array(n));
}

/** `get-random-u64`: a random unsigned 64-bit integer. */
export function randomU64(): bigint {
  const b = randomFillSync(new Uint8Array(8));
  return new DataView(b.buffer).getBigUint64(0, true);
}

/** The three random interfaces, keyed by unversioned interface name. */
export function randomImports(): Record<string, Record<string, unknown>> {
  return {
    'wasi:random/random': { getRandomBytes: randomBytes, getRandomU64: randomU64 },
    'wasi:random/insecure': { getInsecureRandomBytes: randomBytes, getInsecureRandomU64: randomU64 },
    'wasi:random/insecure-seed': { insecureSeed: () => [randomU64(), randomU64()] },
  };
}
