/** What the HTTP routes need from the server: the data plane and the frontend's own settings. */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ServerApi } from '../../core/server-api.js';
import type { Principal } from '../../core/types.js';
import type { HttpLimits } from './limits.js';

export interface FrontendContext {
  /** The only way into the server: nothing under frontend/ touches the manager or model objects. */
  api: ServerApi;
  /** Who sends `req` (single-user mode: always the operator). */
  principalOf(req: FastifyRequest): Principal;
  /** `--http-max-input-size` in bytes. */
  maxInputSize: number;
  /** Connection limits: header / request timeouts, connection cap. */
  limits: HttpLimits;
  logger: Logger;
}
