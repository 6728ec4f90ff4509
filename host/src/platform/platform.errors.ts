/**
 * The error catalogue of the platform (platform/: the native addon), one function per message.
 * Warden's text. The addon's own errors keep their text and code (platform/addon.ts fromAddonError).
 */
import { type TritonError, unavailable } from '../contract/errors.js';

/** UNAVAILABLE: the native addon was not built; `path` where it was looked for (scrubbed before it leaves). */
export function addonNotBuilt(path: string): TritonError {
  return unavailable(`Warden's native backend host is not built (${path} is missing); run 'node scripts/build-native.mjs'`);
}
