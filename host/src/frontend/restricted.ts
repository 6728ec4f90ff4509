/**
 * Restricted API groups, as tritonserver's `--http-restricted-api` / `--grpc-restricted-protocol`
 * (server src/restricted_features.h, src/command_line_parser.cc ParseRestrictedFeatureOption):
 * a group of endpoints answers only requests that carry a configured header (HTTP) or metadata
 * entry (gRPC) with a configured value. The HTTP and gRPC frontends each map their routes / RPCs
 * to these groups (http/restricted.ts, grpc/restricted.ts) and refuse the rest with Triton's
 * answers. The check applies on top of tenant authentication (DESIGN "Multi-tenancy"): both must pass.
 */
import { timingSafeEqual } from 'node:crypto';

/** Triton's group names (restricted_features.h RESTRICTED_CATEGORY_NAMES), in its order. */
export const RESTRICTED_CATEGORIES = [
  'health',
  'metadata',
  'inference',
  'shared-memory',
  'model-config',
  'model-repository',
  'statistics',
  'trace',
  'logging',
] as const;

/** One restricted group. */
export type RestrictedCategory = (typeof RESTRICTED_CATEGORIES)[number];

/** What a restricted group asks of a request: header (metadata key) `header` with value `value`. */
export interface Restriction {
  /** The header / metadata key as configured (gRPC: with the `triton-grpc-protocol-` prefix). */
  header: string;
  value: string;
}

/** The restricted groups of one frontend; a group absent here is open. */
export type RestrictedFeatures = Partial<Record<RestrictedCategory, Restriction>>;

/** Prefix Triton puts before a `--grpc-restricted-protocol` key (grpc_server.h kRestrictedProtocolHeaderTemplate). */
export const GRPC_RESTRICTED_KEY_PREFIX = 'triton-grpc-protocol-';

/**
 * Parse the values of one restriction flag, each `<group>[,<group>...]:<key>=<value>` (the value
 * is everything after the first `=` that follows the first `:`), as Triton parses them.
 * @param option `http-restricted-api` (the key is the header) or `grpc-restricted-protocol` (the key gets {@link GRPC_RESTRICTED_KEY_PREFIX})
 * @returns the groups, or undefined when the flag was not given
 * @throws RangeError with Triton's text: a malformed value, an unknown group, a group named twice
 */
export function parseRestrictedFeatures(option: 'http-restricted-api' | 'grpc-restricted-protocol', args: readonly string[]): RestrictedFeatures | undefined {
  if (args.length === 0) return undefined;
  const kind = option === 'http-restricted-api' ? 'api' : 'protocol';
  const prefix = option === 'http-restricted-api' ? '' : GRPC_RESTRICTED_KEY_PREFIX;
  const features: RestrictedFeatures = {};
  for (const arg of args) {
    // command_line_parser.cc ParseGenericConfigOption(arg, ":", "=")
    const colon = arg.indexOf(':');
    const eq = colon < 0 ? -1 : arg.indexOf('=', colon + 1);
    const groups = colon < 0 ? '' : arg.slice(0, colon);
    const key = eq < 0 ? '' : arg.slice(colon + 1, eq);
    const value = eq < 0 ? '' : arg.slice(eq + 1);
    if (groups === '' || key === '' || value === '') throw new RangeError(`--${option} option format is '<config name>:<setting>=<value>'. Got ${arg}`);
    for (const group of groups.split(',')) {
      if (!(RESTRICTED_CATEGORIES as readonly string[]).includes(group)) throw new RangeError(`unknown restricted ${kind} '${group}'`);
      const category = group as RestrictedCategory;
      if (features[category]) throw new RangeError(`restricted ${kind} '${group}' can not be specified in multiple config groups`);
      features[category] = { header: prefix + key, value };
    }
  }
  return features;
}

/**
 * Whether a request's header / metadata value satisfies `r` (exact bytes; compared in constant
 * time for equal lengths, as the value is a shared secret).
 * @param actual the first value the request carries under `r.header`, undefined when none; a
 *   string is a header as Node decodes it (one character per byte, latin1)
 */
export function restrictionSatisfied(r: Restriction, actual: string | Buffer | undefined): boolean {
  if (actual === undefined) return false;
  const a = typeof actual === 'string' ? Buffer.from(actual, 'latin1') : actual;
  const b = Buffer.from(r.value, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
