/**
 * Bearer tokens: generation, hashing, `Authorization` header parsing and constant-time comparison.
 *
 * Tokens are 32 random bytes (256 bits) from the CSPRNG, base64url-encoded (43 characters). With
 * that much entropy a fast, unsalted SHA-256 is the right hash: nobody can brute-force 2^256
 * preimages, so the slow, salted password hashes (scrypt, argon2) would only add per-request cost.
 * (A slow hash matters for human-chosen passwords, which these are not.)
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Prefix of a stored token hash; the rest is 64 lowercase hex digits. */
export const TOKEN_HASH_PREFIX = 'sha256:';
/** A stored token hash. */
export const TOKEN_HASH_RE = /^sha256:[0-9a-f]{64}$/;
/** Longest token accepted in a header (JWTs included); longer ones are `malformed`, never hashed. */
export const MAX_TOKEN_LENGTH = 8192;
/** RFC 6750 `b64token` syntax (section 2.1). */
const B64TOKEN_RE = /^[A-Za-z0-9\-._~+/]+=*$/;

/** A fresh token: 32 random bytes, base64url without padding (43 characters). */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The stored form of `token`: `sha256:<hex of SHA-256 over its UTF-8 bytes>`. */
export function hashToken(token: string): string {
  return TOKEN_HASH_PREFIX + sha256Hex(token);
}

/** SHA-256 of `token`'s UTF-8 bytes as 32 raw bytes. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The 32 raw bytes of a stored hash (`sha256:<hex>`, already validated against {@link TOKEN_HASH_RE}). */
export function digestOfStoredHash(stored: string): Buffer {
  return Buffer.from(stored.slice(TOKEN_HASH_PREFIX.length), 'hex');
}

function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/**
 * Compares two digests in time independent of where they differ (`crypto.timingSafeEqual`).
 * Different lengths compare unequal (that only reveals the length, which is public: 32 bytes).
 */
export function hashesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Outcome of reading an `Authorization` header value. */
export type BearerParse = { kind: 'token'; token: string } | { kind: 'missing' } | { kind: 'malformed' };

/**
 * Extracts the token from `Bearer <token>` (scheme case-insensitive, RFC 6750 section 2.1).
 * Absent or blank → `missing`; another scheme, no token, a token that is not `b64token` syntax or
 * longer than {@link MAX_TOKEN_LENGTH} → `malformed`.
 */
export function parseBearer(header: string | undefined): BearerParse {
  if (header === undefined) return { kind: 'missing' };
  const value = header.trim();
  if (value === '') return { kind: 'missing' };
  const m = /^([A-Za-z]+)[ \t]+(\S+)$/.exec(value);
  if (!m || m[1]!.toLowerCase() !== 'bearer') return { kind: 'malformed' };
  const token = m[2]!;
  if (token.length > MAX_TOKEN_LENGTH || !B64TOKEN_RE.test(token)) return { kind: 'malformed' };
  return { kind: 'token', token };
}
