/**
 * Server log settings, as the logging extension reads and writes them (spec §3.4: `GET|POST
 * /v2/logging`), mapped onto the pino logger's level. Protocol-neutral: frontends reach it through
 * the data plane (dataplane/server-api.ts).
 */
import type { Logger } from 'pino';
import { invalidArg, unsupported } from '../contract/errors.js';

export interface LogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: 'default' | 'ISO8601';
}

/** Holds Triton's log settings and applies them to the root logger. */
export class LogSettingsStore {
  private s: LogSettings;

  /** @param initial start-up settings (`--log-info`, `--log-file`, ...), applied to the logger */
  constructor(
    private readonly logger: Logger,
    verbose: number,
    initial: Partial<Omit<LogSettings, 'log_verbose_level'>> = {},
  ) {
    this.s = { log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: verbose, log_format: 'default', ...initial };
    if (Object.keys(initial).length > 0) this.apply();
  }

  get(): LogSettings {
    return { ...this.s };
  }

  /** Apply a POST body; `null` values leave a setting unchanged. @throws TritonError on bad values */
  update(body: unknown): LogSettings {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidArg('logging settings must be a JSON object');
    const next = { ...this.s };
    for (const [k, v] of Object.entries(body)) {
      if (v === null) continue;
      switch (k) {
        case 'log_file':
          throw unsupported('log file location can not be updated through network protocol');
        case 'log_info':
        case 'log_warning':
        case 'log_error':
          if (typeof v !== 'boolean') throw invalidArg(`'${k}' must be a boolean`);
          next[k] = v;
          break;
        case 'log_verbose_level':
          if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw invalidArg(`'log_verbose_level' must be a non-negative integer`);
          next.log_verbose_level = v;
          break;
        case 'log_format':
          if (v !== 'default' && v !== 'ISO8601') throw invalidArg(`invalid log format '${String(v)}', expected 'default' or 'ISO8601'`);
          next.log_format = v;
          break;
        default:
          throw invalidArg(`Logging parameter '${k}' is not a valid logging setting`);
      }
    }
    this.s = next;
    this.apply();
    return this.get();
  }

  private apply(): void {
    if (this.logger.level === 'silent') return;
    const s = this.s;
    this.logger.level = s.log_verbose_level > 0 ? 'debug' : s.log_info ? 'info' : s.log_warning ? 'warn' : s.log_error ? 'error' : 'fatal';
  }
}
