/**
 * The error catalogue of metrics/ (the `--metrics-config` settings), one function per message.
 * Triton's wording where Triton has the message (server `src/command_line_parser.cc`
 * `ParseMetricsConfigOption`), Warden's otherwise.
 */
import { type TritonError, invalidArg } from '../contract/errors.js';

/** INVALID_ARG: a `--metrics-config` argument that is not `<setting>=<value>` (Triton's text). */
export function metricsConfigMalformed(arg: string): TritonError {
  return invalidArg(`--metrics-config option format is <setting>=<value>. Got ${arg}`);
}

/** INVALID_ARG: a boolean `--metrics-config` setting given another value (Warden's text; Triton reads anything but the one word as the default). */
export function metricsConfigNotBool(setting: string, value: string): TritonError {
  return invalidArg(`--metrics-config=${setting}=${value}: '${setting}' expects true or false`);
}

/** INVALID_ARG: `summary_quantiles` that is not a list of `<quantile>:<error>` with 0 < quantile ≤ 1 and 0 ≤ error < 1 (Warden's text; Triton logs and skips the pair). */
export function summaryQuantilesMalformed(value: string, pair: string): TritonError {
  return invalidArg(
    `--metrics-config=summary_quantiles=${value}: '${pair}' is not <quantile>:<error> with 0 < quantile <= 1 and 0 <= error < 1 (e.g. summary_quantiles=0.5:0.05,0.9:0.01,0.99:0.001)`,
  );
}
