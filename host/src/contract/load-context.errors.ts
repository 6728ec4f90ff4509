/**
 * The error catalogue of the load context a backend gets (contract/load-context.ts), one function
 * per message. Warden's text.
 */
import { type TritonError, unavailable } from './errors.js';

/** UNAVAILABLE: in-process (BLS) inference from a backend loaded with no server attached. */
export function inferenceUnavailable(): TritonError {
  return unavailable('in-process inference is not available in this server');
}
