/**
 * The error catalogue of the log settings extension (spec §3.4 `/v2/logging`,
 * dataplane/log-settings.ts) and of the settings' access (dataplane/settings.ts), one function per
 * message. Triton's wording where Triton has the message (server `src/http_server.cc`
 * HandleLogging, `src/common.cc`), Warden's otherwise.
 */
import { TritonError, forbidden, invalidArg, unsupported } from '../contract/errors.js';

/** INVALID_ARG: a body that is not an object (Warden's text). */
export function logSettingsNotObject(): TritonError {
  return invalidArg('logging settings must be a JSON object');
}

/** UNSUPPORTED: `log_file` over the network (Triton's text). */
export function logFileNotUpdatable(): TritonError {
  return unsupported('log file location can not be updated through network protocol');
}

/** INVALID_ARG: a boolean setting of another type (Warden's text). */
export function logSettingNotBoolean(key: string): TritonError {
  return invalidArg(`'${key}' must be a boolean`);
}

/** INVALID_ARG: `log_verbose_level` not a non-negative integer (Warden's text). */
export function logVerboseLevelInvalid(): TritonError {
  return invalidArg(`'log_verbose_level' must be a non-negative integer`);
}

/** INVALID_ARG: an unknown `log_format` (Warden's text). */
export function logFormatInvalid(value: unknown): TritonError {
  return invalidArg(`invalid log format '${String(value)}', expected 'default' or 'ISO8601'`);
}

/** INVALID_ARG: an unknown setting (Triton's text). */
export function logSettingUnknown(key: string): TritonError {
  return invalidArg(`Logging parameter '${key}' is not a valid logging setting`);
}

/** UNAVAILABLE: tracing is off in this server (Warden's text). */
export function tracingUnsupported(): TritonError {
  return new TritonError('UNAVAILABLE', 'the server does not support tracing');
}

/** INVALID_ARG: trace settings for a model the caller cannot see (Triton's text, `http_server.cc` HandleTrace). */
export function traceModelUnknown(model: string): TritonError {
  return invalidArg(`Request for unknown model : ${model}`);
}

/** AccessError forbidden: settings are for administrators (Warden's text, DESIGN "Multi-tenancy"); `what` names them. */
export function settingsAdminOnly(what: string): TritonError {
  return forbidden(`${what} are available to administrators only`);
}
