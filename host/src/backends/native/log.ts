/**
 * Backend log lines (TRITONSERVER_LogMessage) into pino. The native sink is process-wide: the
 * most recently installed logger receives every native backend's lines.
 */
import type { Logger } from 'pino';
import type { NativeAddon } from '../../platform/addon.js';

const LEVELS = ['info', 'warn', 'error', 'debug'] as const;
let installed = false;

/** Route TRITONSERVER_LogMessage (INFO, WARN, ERROR, VERBOSE→debug) to `logger`, honouring its level. */
export function installNativeLogger(addon: NativeAddon, logger: Logger): void {
  installed = true;
  addon.setLogger(
    (level, file, line, message) => {
      const method = LEVELS[level] ?? 'info';
      logger[method]({ file, line }, message);
    },
    {
      info: logger.isLevelEnabled('info'),
      warn: logger.isLevelEnabled('warn'),
      error: logger.isLevelEnabled('error'),
      verbose: logger.isLevelEnabled('debug'),
    },
  );
}

/** Install `logger` as the native log sink unless one was installed already. */
export function ensureNativeLogger(addon: NativeAddon, logger: Logger): void {
  if (!installed) installNativeLogger(addon, logger);
}
