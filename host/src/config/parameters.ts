/**
 * Reading typed values out of a model config's free-form `parameters` (spec §5.3
 * `ModelParameter`: every value is a `string_value`).
 */
import type { ModelConfig } from '../contract/model-config.js';
import { parameterNotPositive } from './config.errors.js';

/**
 * The positive integer in `parameters[key].string_value` (or 0 when `allowZero` and the value is
 * `0`), or undefined when the parameter is absent.
 * @throws TritonError INVALID_ARG "model '<m>': parameter <key> must be a positive integer, got '<v>'"
 */
export function positiveIntParam(config: Pick<ModelConfig, 'name' | 'parameters'>, key: string, allowZero = false): number | undefined {
  const p = config.parameters?.[key];
  if (p === undefined) return undefined;
  const s = p.string_value.trim();
  if (allowZero && s === '0') return 0;
  if (!/^\d+$/.test(s)) throw parameterNotPositive(config.name, key, p.string_value);
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n <= 0) throw parameterNotPositive(config.name, key, p.string_value);
  return n;
}
