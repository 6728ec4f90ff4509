/**
 * How a host capability fails a WIT function that returns `result<_, error>`
 * (`warden:backend/host`): it throws `{ payload: error }`. jco's glue turns exactly that into the
 * guest's `err` value; anything else thrown out of an import is a host bug and traps the guest.
 */
import type * as WitTypes from '../wit-types/interfaces/warden-backend-types.js';

/** The thrown form of a WIT `error` result. */
export interface HostCallError {
  payload: WitTypes.Error;
}

/** Builds the thrown form of a WIT `error` (`code` as in `error-code`, e.g. `invalid-arg`). */
export function witErr(code: WitTypes.ErrorCode, message: string): HostCallError {
  return { payload: { code, message } };
}
