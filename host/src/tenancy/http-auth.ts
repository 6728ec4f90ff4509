/**
 * What the frontend answers when authentication fails, independent of the HTTP framework
 * (RFC 6750 section 3): status 401, a `WWW-Authenticate: Bearer realm="warden"` challenge, with
 * `error="invalid_token"` when a credential was sent but is malformed or unknown. The body text
 * goes into Triton's error shape `{"error": "<message>"}`. Nothing here depends on the token.
 */
import type { AuthFailureReason } from './registry.js';

/** The realm in every challenge. */
export const AUTH_REALM = 'warden';

/** A 401 response, ready for any HTTP framework. */
export interface AuthFailureResponse {
  /** Always 401. */
  status: 401;
  /** Error text for the body (`{"error": message}`). */
  message: string;
  /** Value of the `WWW-Authenticate` header. */
  wwwAuthenticate: string;
}

/** The 401 answer for a failed authentication. */
export function authFailure(reason: AuthFailureReason): AuthFailureResponse {
  switch (reason) {
    case 'missing':
      return {
        status: 401,
        message: "authentication required: send 'Authorization: Bearer <token>'",
        wwwAuthenticate: `Bearer realm="${AUTH_REALM}"`,
      };
    case 'malformed':
      return {
        status: 401,
        message: "malformed Authorization header: expected 'Bearer <token>'",
        wwwAuthenticate: `Bearer realm="${AUTH_REALM}", error="invalid_token", error_description="malformed credentials"`,
      };
    case 'unknown':
      return {
        status: 401,
        message: 'invalid or expired token',
        wwwAuthenticate: `Bearer realm="${AUTH_REALM}", error="invalid_token", error_description="invalid or expired token"`,
      };
  }
}
