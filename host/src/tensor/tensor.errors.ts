/**
 * The error catalogue of tensor data codecs (tensor/json.ts: JSON `data` ⇄ bytes, spec §1.10;
 * tensor/bytes.ts: BYTES elements, spec §1.9), one function per message. Triton's wording where
 * Triton has the message (server `src/http_server.cc` ReadDataFromJson, its JSON wrapper
 * `triton_json.h` behind the `Unable to parse 'data'` prefix, INTERNAL as Triton answers them),
 * Warden's otherwise. `what` names the tensor (`input 'x'`).
 */
import { TritonError, internal, invalidArg } from '../contract/errors.js';

/** INVALID_ARG: FP16 / BF16 data in JSON (Triton's text). */
export function jsonHalfUnsupported(datatype: string, input: string): TritonError {
  return invalidArg(`receiving ${datatype} data via JSON is not supported. Please use the binary data format for input ${input}`);
}

/** INTERNAL: JSON `data` whose element count differs from the shape's (Triton's text). */
export function jsonDataShapeMismatch(): TritonError {
  return internal("Unable to parse 'data': Shape does not match true shape of 'data' field");
}

/** INTERNAL: a JSON element of the wrong type for the datatype (Triton's JSON wrapper text); `read` what was read (`string`, `boolean`, `double`, `signed integer`, ...). */
export function jsonDataElementType(expected: string, read: string): TritonError {
  return internal(`Unable to parse 'data': attempt to access JSON non-${expected} as ${read}`);
}

/** INTERNAL: a datatype the JSON codec has no case for (a bug). */
export function jsonDatatypeUnhandled(datatype: string): TritonError {
  return new TritonError('INTERNAL', `unhandled datatype ${datatype}`);
}

/** INVALID_ARG: an output's bytes not a whole number of elements, bytes. */
export function outputBytesNotElements(bytes: number, datatype: string, elementBytes: number): TritonError {
  return invalidArg(`output byte size ${bytes} is not a multiple of the ${datatype} element size ${elementBytes}`);
}

/** INVALID_ARG: a BYTES element's 4-byte length cut short. */
export function bytesLengthIncomplete(what: string): TritonError {
  return invalidArg(`incomplete BYTES element length in ${what}`);
}

/** INVALID_ARG: a BYTES element past the end of its tensor; `length` its declared bytes, if read. */
export function bytesElementPastEnd(what: string, length?: number): TritonError {
  return invalidArg(length === undefined ? `BYTES element runs past the end of ${what}` : `BYTES element of ${length} bytes runs past the end of ${what}`);
}
