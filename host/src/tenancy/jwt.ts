/**
 * Optional JWT bearer tokens (`--jwt-jwks-url` / `--jwt-jwks-file`, `--jwt-issuer`,
 * `--jwt-audience`, `--jwt-tenant-claim`), verified with `jose` against a JSON Web Key Set of
 * public signature keys (symmetric keys are not accepted, so nobody holding only the JWKS can mint
 * tokens). A verified token names a tenant in a claim; the registry then requires that tenant to
 * be in the tenants file, whose role and quotas apply — the identity provider says who, the
 * tenants file says what they may do.
 *
 * Issuer and audience are required: without an audience check, any token the identity provider
 * issues for another service would be accepted here. `exp` is required too.
 */
import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import { TenancyConfigError } from './format.js';
import { watchFileContent, type FileWatch, type FileWatchOptions } from './watch.js';

/** JWT verification settings (the `--jwt-*` flags). Exactly one of `jwksUrl` / `jwksFile`. */
export interface JwtOptions {
  /** HTTPS (or HTTP) URL of the identity provider's JWKS; fetched and cached by jose's `createRemoteJWKSet`. */
  jwksUrl?: string;
  /** Path of a local JWKS JSON file (works offline); re-read when it changes, like the tenants file. */
  jwksFile?: string;
  /** Accepted `iss` value(s). Required. */
  issuer: string | string[];
  /** Accepted `aud` value(s). Required. */
  audience: string | string[];
  /** Claim holding the tenant id (a top-level string claim). Default `sub`. */
  tenantClaim?: string;
  /** Accepted JWS algorithms (e.g. `['RS256', 'ES256']`); default: whatever the key set's keys allow. */
  algorithms?: string[];
  /** Leeway for `exp` / `nbf`, seconds (default 30). */
  clockToleranceSec?: number;
}

/** Outcome of verifying one JWT. `detail` is a fixed phrase (never token content), for logs. */
export type JwtResult = { ok: true; tenantId: string } | { ok: false; reason: 'malformed' | 'unknown'; detail: string };

/** Compact JWS shape: three base64url segments. Opaque tokens (base64url, no dots) never match. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** True when `token` has the shape of a compact JWT (cheap; no decoding). */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

/** Verifies JWTs against a key set. Create with {@link JwtVerifier.create}; `close()` stops the JWKS file watch. */
export class JwtVerifier {
  private constructor(
    private keys: JWTVerifyGetKey,
    private readonly options: JwtOptions,
    private watch?: FileWatch,
  ) {}

  /**
   * Validates `options` and loads the key set (a JWKS file is read now and, unless `watch: false`,
   * re-read when it changes; a URL is fetched lazily on the first token and cached by jose).
   * @throws TenancyConfigError on bad options, an unreadable JWKS file or one that is not a JWKS.
   */
  static async create(options: JwtOptions, context: { logger?: Logger; watch?: FileWatchOptions | false } = {}): Promise<JwtVerifier> {
    const { logger } = context;
    validateOptions(options);
    if (options.jwksUrl !== undefined) {
      const keys = createRemoteJWKSet(new URL(options.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 });
      return new JwtVerifier(keys, options);
    }
    const path = options.jwksFile!;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new TenancyConfigError(`JWKS file ${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const verifier = new JwtVerifier(localKeySet(text, path), options);
    if (context.watch === false) return verifier;
    verifier.watch = watchFileContent(
      path,
      text,
      (next) => {
        try {
          verifier.keys = localKeySet(next, path);
          logger?.info({ jwksFile: path }, 'JWKS file reloaded');
        } catch (err) {
          logger?.error({ jwksFile: path, error: (err as Error).message }, 'JWKS file not reloaded; keeping the previous keys');
        }
      },
      { ...context.watch, onError: (err) => logger?.error({ jwksFile: path, code: err.code }, 'JWKS file cannot be read; keeping the previous keys') },
    );
    return verifier;
  }

  /** Verifies signature, `iss`, `aud`, `exp` (required), `nbf`, and extracts the tenant claim. Never throws. */
  async verify(token: string): Promise<JwtResult> {
    const claim = this.options.tenantClaim ?? 'sub';
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: this.options.algorithms,
        clockTolerance: this.options.clockToleranceSec ?? 30,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      return failure(err);
    }
    const tenantId = payload[claim];
    if (typeof tenantId !== 'string' || tenantId === '') {
      return { ok: false, reason: 'unknown', detail: `jwt has no string '${claim}' claim` };
    }
    return { ok: true, tenantId };
  }

  close(): void {
    this.watch?.close();
  }
}

function validateOptions(o: JwtOptions): void {
  const bad = (msg: string): never => {
    throw new TenancyConfigError(`JWT settings: ${msg}`);
  };
  if ((o.jwksUrl === undefined) === (o.jwksFile === undefined)) bad('give exactly one of --jwt-jwks-url and --jwt-jwks-file');
  if (o.jwksUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(o.jwksUrl);
    } catch {
      bad('--jwt-jwks-url is not a URL');
    }
    if (url!.protocol !== 'https:' && url!.protocol !== 'http:') bad('--jwt-jwks-url must be an http(s) URL');
  }
  const nonEmpty = (v: string | string[] | undefined): boolean => v !== undefined && (Array.isArray(v) ? v.length > 0 && v.every((s) => s !== '') : v !== '');
  if (!nonEmpty(o.issuer)) bad('--jwt-issuer is required');
  if (!nonEmpty(o.audience)) bad('--jwt-audience is required (without it, tokens meant for other services would be accepted)');
  if (o.tenantClaim !== undefined && o.tenantClaim === '') bad('--jwt-tenant-claim must not be empty');
  if (o.clockToleranceSec !== undefined && !(o.clockToleranceSec >= 0 && Number.isFinite(o.clockToleranceSec))) {
    bad('clock tolerance must be a non-negative number of seconds');
  }
}

/** @throws TenancyConfigError when `text` is not a JWKS with at least one key. */
function localKeySet(text: string, path: string): JWTVerifyGetKey {
  let jwks: unknown;
  try {
    jwks = JSON.parse(text);
  } catch {
    throw new TenancyConfigError(`JWKS file ${path}: invalid JSON`);
  }
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === 'object' && k !== null)) {
    throw new TenancyConfigError(`JWKS file ${path}: expected {"keys": [<JWK>, ...]} with at least one key`);
  }
  if (keys.some((k: Record<string, unknown>) => 'd' in k || k.kty === 'oct')) {
    throw new TenancyConfigError(`JWKS file ${path}: holds private or symmetric key material; give public keys only`);
  }
  return createLocalJWKSet(jwks as JSONWebKeySet);
}

/** jose's error codes and the fixed phrase each maps to (jose messages are safe too, but a fixed set is easier to audit). */
const JOSE_FAILURES = new Map<string, string>([
  ['ERR_JWT_EXPIRED', 'jwt expired'],
  ['ERR_JWS_SIGNATURE_VERIFICATION_FAILED', 'jwt signature invalid'],
  ['ERR_JWKS_NO_MATCHING_KEY', 'jwt signed by no single key of the key set'],
  ['ERR_JWKS_MULTIPLE_MATCHING_KEYS', 'jwt signed by no single key of the key set'],
  ['ERR_JOSE_ALG_NOT_ALLOWED', 'jwt algorithm not allowed'],
  ['ERR_JOSE_NOT_SUPPORTED', 'jwt algorithm not allowed'],
  ['ERR_JWKS_TIMEOUT', 'jwks unavailable'],
  ['ERR_JWKS_INVALID', 'jwks unavailable'],
]);

/** Maps a jose error to a fixed phrase ({@link JOSE_FAILURES}); a malformed token is `malformed`, anything else `unknown`. */
function failure(err: unknown): JwtResult {
  const e = err as { code?: string; claim?: string };
  if (e.code === 'ERR_JWS_INVALID' || e.code === 'ERR_JWT_INVALID') return { ok: false, reason: 'malformed', detail: 'not a valid jwt' };
  if (e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') return { ok: false, reason: 'unknown', detail: `jwt claim '${String(e.claim).slice(0, 32)}' check failed` };
  return { ok: false, reason: 'unknown', detail: JOSE_FAILURES.get(e.code ?? '') ?? 'jwt rejected' };
}
