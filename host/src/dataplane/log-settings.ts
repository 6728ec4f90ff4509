/**
 * Server log settings, as the logging extension reads and writes them (spec §3.4: `GET|POST
 * /v2/logging`), mapped onto the pino logger's level. Protocol-neutral: frontends reach it through
 * the data plane (dataplane/server-api.ts).
 */
import type { Logger } from 'pino';
import * as err from './settings.errors.js';

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
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw err.logSettingsNotObject();
    const next = { ...this.s };
    for (const [k, v] of Object.entries(body)) {
      if (v === null) continue;
      switch (k) {
        case 'log_file':
          throw err.logFileNotUpdatable();
        case 'log_info':
        case 'log_warning':
        case 'log_error':
          if (typeof v !== 'boolean') throw err.logSettingNotBoolean(k);
          next[k] = v;
          break;
        case 'log_verbose_level':
          if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw err.logVerboseLevelInvalid();
          next.log_verbose_level = v;
          break;
        case 'log_format':
          if (v !== 'default' && v !== 'ISO8601') throw err.logFormatInvalid(v);
          next.log_format = v;
          break;
        default:
          throw err.logSettingUnknown(k);
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
