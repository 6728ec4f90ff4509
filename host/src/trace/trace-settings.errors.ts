/**
 * The error catalogue of the trace extension's settings (spec §3.5 `/v2/trace/setting`,
 * trace/trace-manager.ts), one function per message. Triton's wording (server `src/tracer.cc`,
 * `src/http_server.cc` HandleTrace, `src/command_line_parser.h`), Warden's where noted.
 */
import { type TritonError, invalidArg, unsupported } from '../contract/errors.js';

/** INVALID_ARG: a setting that is not a string (Triton's text: the value as JSON). */
export function settingNotString(key: string, value: unknown): TritonError {
  return invalidArg(`Unable to parse '${key}', got: ${JSON.stringify(value)}`);
}

/** INVALID_ARG: a setting that is not an integer (Triton's text, `command_line_parser.h` ParseOption). */
export function settingNotInteger(key: string, value: string): TritonError {
  return invalidArg(`Unable to parse '${key}', got: ${value}`);
}

/** INVALID_ARG: `trace_count` below its minimum (Triton's text, no space after `got:`). */
export function traceCountTooSmall(min: number, value: string): TritonError {
  return invalidArg(`Unable to parse 'trace_count'. Expecting value >= ${min}, got:${value}`);
}

/** INVALID_ARG: an integer setting out of range (Triton's text). */
export function settingOutOfRange(key: string, min: number, max: number, value: string): TritonError {
  return invalidArg(`Unable to parse '${key}', value is out of range [ ${min}, ${max} ], got: ${value}`);
}

/** INVALID_ARG: a body that is not an object (Warden's text). */
export function traceSettingsNotObject(): TritonError {
  return invalidArg('trace settings must be a JSON object');
}

/** UNSUPPORTED: `trace_file` over the network (Triton's text). */
export function traceFileNotUpdatable(): TritonError {
  return unsupported('trace file location can not be updated through network protocol');
}

/** INVALID_ARG: Triton's JSON wrapper on a value of the wrong type (`triton_json.h`), without a member prefix. */
export function traceJsonType(expected: 'array' | 'string'): TritonError {
  return invalidArg(`attempt to access JSON non-${expected} as ${expected}`);
}

/** INVALID_ARG: `OFF` among other trace levels (Triton's text). */
export function traceLevelOffNotAlone(): TritonError {
  return invalidArg(`Expect only one trace level 'OFF' is specified`);
}
