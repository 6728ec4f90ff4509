/**
 * How the CLI's log lines look (`--log-style`, cli-options.ts): pino's JSON lines for machines
 * (a pipe, a file, a log collector), or pino-pretty's readable lines for a person at a terminal.
 * `--log-format` keeps tritonserver's meaning (the timestamp format) in both styles.
 */
import { prettyFactory } from 'pino-pretty';
import type { LogStyle } from './cli-options.js';
import { MODEL_TABLE_KEY } from './lifecycle/model-table.js';

/**
 * The style in effect: `pretty` or `json` as asked; `auto` = pretty only when stdout is a terminal
 * and the log goes to it (no `--log-file`).
 */
export function effectiveLogStyle(style: LogStyle | undefined, stdoutIsTty: boolean, logFile: string | undefined): 'pretty' | 'json' {
  if (style === 'pretty' || style === 'json') return style;
  return stdoutIsTty && !logFile ? 'pretty' : 'json';
}

/**
 * A function turning one of pino's JSON lines into a readable line (pino-pretty, in process and
 * synchronous, so the caller's destination and its error handling stay as they are): the time
 * (ISO 8601 in UTC with `--log-format=ISO8601`, else the local time of day), the level, the
 * message, then the record's other fields as one JSON object on the same line (an error's stack
 * on the lines below).
 * @param colour ANSI colours (a terminal)
 */
export function prettyLines(opts: { iso8601: boolean; colour: boolean }): (line: string) => string {
  const format = prettyFactory({
    colorize: opts.colour,
    // The start-up table's rows are its message already (lifecycle/model-table.ts).
    ignore: `pid,hostname,service,${MODEL_TABLE_KEY}`,
    translateTime: opts.iso8601 ? "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'" : 'SYS:HH:MM:ss.l',
    singleLine: true,
  });
  return (line) => format(line);
}
