/** What the HTTP routes need from the server. */
import type { Logger } from 'pino';
import type { ModelRepositoryManager } from '../../core/repository-manager.js';

export interface FrontendContext {
  manager: ModelRepositoryManager;
  /** `--strict-readiness`: ready = live and every model ready. */
  strictReadiness: boolean;
  /** False once shutdown started (ready then fails; live stays true until the socket closes). */
  accepting(): boolean;
  /** `--http-max-input-size` in bytes. */
  maxInputSize: number;
  logger: Logger;
}
