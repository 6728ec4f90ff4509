/**
 * Test JWTs (docs/tenancy.md "Identity"; host/src/tenancy/jwt.ts): an ES256 signing key with its
 * public JWK, and a signer whose issuer, audience, expiry and key a test may override per token.
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/** Per-token overrides of a {@link jwtSigner}'s defaults: the signing key, `iss`, `aud`, `exp` (a jose time span such as `'5m'`, or epoch seconds). */
export interface JwtOverrides {
  key?: CryptoKey;
  iss?: string;
  aud?: string;
  exp?: string | number;
}

/** A fresh ES256 key pair: the private key (to sign) and the public key as a JWK of `kid` for a JWKS (`{ keys: [jwk] }`). */
export async function signingKey(kid: string): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  return { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/**
 * A signer of ES256 JWTs carrying `claims`, header `kid`, issued now, with `issuer`, `audience`, an
 * expiry in 5 minutes and `key()` (read at each signing) unless a token overrides them.
 */
export function jwtSigner(defaults: {
  kid: string;
  issuer: string;
  audience: string;
  key: () => CryptoKey;
}): (claims: JWTPayload, overrides?: JwtOverrides) => Promise<string> {
  return (claims, o = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: defaults.kid })
      .setIssuer(o.iss ?? defaults.issuer)
      .setAudience(o.aud ?? defaults.audience)
      .setIssuedAt()
      .setExpirationTime(o.exp ?? '5m')
      .sign(o.key ?? defaults.key());
}
