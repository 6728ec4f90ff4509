/**
 * The error catalogue of model configurations (config/: reading config.pbtxt or a JSON override,
 * auto-completing, normalising, validating and printing it; spec §5), one function per message.
 * Triton's wording where Triton has the message (core `src/model_config_utils.cc`,
 * `src/model_repository_manager/model_repository_manager.cc`, common `triton_json.h`), Warden's
 * otherwise. INVALID_ARG unless noted. A path in a message is as the server read it; the data
 * plane names it relative to its model repository before it leaves (contract/public-errors.ts).
 * The texts of a configuration that does not fit model_config.proto (spec §5.2, §1.7) take a
 * {@link ConfigAt}: which reader found the problem frames the text. Validation against Triton's
 * rules is in validate.errors.ts.
 */
import { type TritonError, internal, invalidArg } from '../contract/errors.js';

/** A `config` name (`--model-config-name`) that is not one plain file name (Warden's text). */
export function configNameInvalid(configName: string): TritonError {
  return invalidArg(`invalid model config name '${configName}'`);
}

/** A load request's `config` override that is not a model configuration; `detail` why (Triton's prefix). */
export function overrideInvalid(detail: string): TritonError {
  return invalidArg(`Invalid config override: ${detail}`);
}

/** No config.pbtxt and auto-complete disabled (Triton's text). */
export function configNotProvided(): TritonError {
  return invalidArg('model configuration is not provided');
}

/** INTERNAL: config.pbtxt exists but cannot be read; `detail` the system's reason (Triton's text). */
export function configUnreadable(path: string, detail: string): TritonError {
  return internal(`failed to open text file for read ${path}: ${detail}`);
}

/** A config file that is not UTF-8; `file` as `<model>/<relative path>` (Warden's text). */
export function configNotUtf8(file: string): TritonError {
  return invalidArg(`${file}: file is not valid UTF-8`);
}

/** INTERNAL: auto-completing, normalising or validating failed with other than a TritonError (Warden's text). */
export function configLoadFailed(model: string, detail: string): TritonError {
  return internal(`failed to load configuration of model '${model}': ${detail}`);
}

/** A parameter that must be a positive integer (Warden's text). */
export function parameterNotPositive(model: string, key: string, value: string): TritonError {
  return invalidArg(`model '${model}': parameter ${key} must be a positive integer, got '${value}'`);
}

/** A backend's auto-completed configuration JSON that is not a model configuration (Warden's text). */
export function backendConfigInvalid(backend: string, model: string, detail: string): TritonError {
  return invalidArg(`backend '${backend}' set an invalid configuration for model '${model}': ${detail}`);
}

/** A model with no backend, platform or file whose name does not name one either (Triton's text). */
export function backendUndetermined(model: string): TritonError {
  return invalidArg(
    `Invalid model name: Could not determine backend for model '${model}' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.`,
  );
}

/** An instance group still KIND_AUTO after normalisation; `where` names it (Warden's text). */
export function instanceKindAuto(where: string): TritonError {
  return invalidArg(`${where} has unexpected kind KIND_AUTO`);
}

/** A JSON model configuration that does not parse; `detail` the parser's reason (Warden's text). */
export function configJsonMalformed(detail: string): TritonError {
  return invalidArg(`malformed JSON model configuration: ${detail}`);
}

/** A position in pbtxt text: the file as `<model>/<relative path>` (or `config.pbtxt`), 1-based line and column. */
export interface PbtxtPosition {
  readonly source: string;
  readonly line: number;
  readonly col: number;
}

/**
 * Where a configuration text went wrong, which frames the message. `in`: a pbtxt position
 * (`<source>:<line>:<col>: <text>`), 'json' the JSON reader (`<text>`), 'check' the structural
 * check of defaults.ts (`invalid model configuration: <text>`), 'print' the pbtxt printer
 * (`cannot print config: <text>`). `path`: the field path, appended as ` (at <path>)` when set
 * (always by the printer).
 */
export interface ConfigAt {
  readonly in: PbtxtPosition | 'json' | 'check' | 'print';
  readonly path?: string;
}

function framed(at: ConfigAt, text: string): TritonError {
  const field = at.path ? ` (at ${at.path})` : '';
  if (at.in === 'json') return invalidArg(`${text}${field}`);
  if (at.in === 'check') return invalidArg(`invalid model configuration: ${text}${field}`);
  if (at.in === 'print') return invalidArg(`cannot print config: ${text} (at ${at.path ?? ''})`);
  return invalidArg(`${at.in.source}:${at.in.line}:${at.in.col}: ${text}${field}`);
}

/** A field the message type `message` does not have. */
export function fieldUnknown(at: ConfigAt, field: string, message: string): TritonError {
  return framed(at, `unknown field '${field}' in ${message}`);
}

/**
 * A token or value of another kind than the reader wanted: `expected` what it wanted ("a string",
 * "an integer for int32", "':' after field name 'dims'", ...), `got` what it found, as shown.
 */
export function unexpectedValue(at: ConfigAt, expected: string, got: string): TritonError {
  return framed(at, `expected ${expected}, got ${got}`);
}

/** Two members of one oneof set; each reader words it as it always has. */
export function oneofConflict(at: ConfigAt, field: string, other: string, oneof: string, message: string): TritonError {
  const belong = `belong to oneof '${oneof}' of ${message}`;
  if (at.in === 'check') return framed(at, `'${field}' and '${other}' are both set but ${belong}`);
  return framed(at, `${at.in === 'json' ? '' : 'field '}'${field}' cannot be set together with '${other}': both ${belong}`);
}

/**
 * A value that is no member of the enum `enumName`; `value` as shown (the pbtxt reader: the name as
 * written, or the number), `names` the members (named by the pbtxt and JSON readers).
 */
export function enumValueInvalid(at: ConfigAt, enumName: string, value: string | number, names = ''): TritonError {
  if (at.in === 'check' || at.in === 'print') return framed(at, `invalid ${enumName} value ${value}`);
  if (at.in === 'json') return framed(at, `invalid value ${value} for enum ${enumName}; expected one of ${names}`);
  const shown = typeof value === 'number' ? `number ${value}` : `value '${value}'`;
  return framed(at, `unknown enum ${shown} for ${enumName}; expected one of ${names}`);
}

/** A key of a uint64-keyed map that is no unsigned integer (Warden's: under 2^53). */
export function mapKeyNotUnsigned(at: ConfigAt, key: string): TritonError {
  return framed(at, `map key must be an unsigned integer, got ${JSON.stringify(key)}`);
}

/** An integer outside the protobuf range of `kind`. */
export function integerOutOfRange(at: ConfigAt, value: bigint, kind: string): TritonError {
  return framed(at, `value ${value} is out of range for ${kind}`);
}

/**
 * An integer beyond 2^53-1 in magnitude, which Warden's numbers cannot hold exactly. `as`: the
 * wording of the check that found it: a config value of `kind`, a JS number, a JSON number.
 */
export function integerInexact(at: ConfigAt, value: bigint | number, kind: string, as: 'config' | 'number' | 'json'): TritonError {
  if (as === 'json') return framed(at, `integer ${value} exceeds 2^53-1 in magnitude and cannot be represented exactly; values this large are not supported`);
  if (as === 'number') return framed(at, `value ${value} exceeds 2^53-1 in magnitude and cannot be represented exactly`);
  return framed(at, `value ${value} exceeds 2^53-1 in magnitude; Warden keeps ${kind} config values as exact JSON numbers and cannot represent it`);
}

/** A JSON `null` inside a list or map, where protobuf JSON gives it no meaning. */
export function nullNotAllowed(at: ConfigAt): TritonError {
  return framed(at, 'null is not allowed here');
}

/** A JSON field given under both its names. */
export function fieldGivenTwice(at: ConfigAt, field: string, first: string, second: string): TritonError {
  return framed(at, `field '${field}' is given twice (as '${first}' and '${second}')`);
}

/** A pbtxt field set twice: a non-repeated field of `message`, or (`message` undefined) `key` / `value` of a map entry. */
export function fieldRepeated(at: ConfigAt, field: string, message?: string): TritonError {
  if (message === undefined) return framed(at, `'${field}' is specified more than once in a map entry`);
  return framed(at, `non-repeated field '${field}' is specified more than once in ${message}`);
}

/** The printer met a message-typed field where its schema wanted a scalar (a schema defect). */
export function printMessageAsScalar(at: ConfigAt): TritonError {
  return framed(at, 'internal: message where scalar expected');
}

/** pbtxt input ending inside a block: `close` the symbol wanted, `what` the block, opened at `open`. */
export function pbtxtUnclosed(at: ConfigAt, close: string, what: string, open: { line: number; col: number }): TritonError {
  return framed(at, `unexpected end of input: expected '${close}' to close ${what} opened at ${open.line}:${open.col}`);
}

/** pbtxt extension or Any syntax (`[type.url] { }`) in the message type `message`. */
export function pbtxtExtensionSyntax(at: ConfigAt, message: string): TritonError {
  return framed(at, `extension and Any syntax ('[...]') is not supported in ${message}`);
}

/** A pbtxt list `[...]` given to a field that is not repeated. */
export function pbtxtListNotRepeated(at: ConfigAt, field: string): TritonError {
  return framed(at, `field '${field}' is not repeated; a list '[...]' is not allowed`);
}

/** A pbtxt map entry field other than `key` / `value`; `token` as shown. */
export function pbtxtMapEntryField(at: ConfigAt, token: string, field: string): TritonError {
  return framed(at, `unknown field ${token} in map entry of '${field}' (expected 'key' or 'value')`);
}

const NUMBER_PROBLEMS = {
  hex: () => '"0x" must be followed by hex digits',
  exponent: () => '"e" must be followed by exponent digits',
  identifier: (text: string) => `need space between number and identifier ('${text}')`,
  octal: (text: string) => `numbers starting with leading zero must be in octal ('${text}')`,
  malformed: (text: string) => `malformed number '${text}'`,
} as const;

/** A pbtxt number literal that does not read; `text` the literal where the text shows it. */
export function pbtxtNumberInvalid(at: ConfigAt, problem: keyof typeof NUMBER_PROBLEMS, text = ''): TritonError {
  return framed(at, NUMBER_PROBLEMS[problem](text));
}

const STRING_PROBLEMS = {
  unterminated: () => 'unterminated string (string literals cannot cross line boundaries)',
  octalRange: () => 'octal escape out of range',
  hexDigits: () => 'expected hex digits for escape sequence',
  unicodeDigits: (e: string) => `expected ${e === 'u' ? 4 : 8} hex digits after '\\${e}'`,
  codePoint: (e: string) => `invalid unicode code point in escape '\\${e}'`,
  escape: (e: string) => `invalid escape sequence '\\${e}' in string literal`,
  utf8: () => 'string contains invalid UTF-8 (from escape sequences)',
} as const;

/** A pbtxt string literal that does not read; `escape` the escape after its `\` where the text shows it. */
export function pbtxtStringInvalid(at: ConfigAt, problem: keyof typeof STRING_PROBLEMS, escape = ''): TritonError {
  return framed(at, STRING_PROBLEMS[problem](escape));
}
