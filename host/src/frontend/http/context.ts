/** What the HTTP routes need from the server: the data plane and the frontend's own settings. */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ServerApi } from '../../dataplane/server-api.js';
import type { SystemSharedMemory } from '../../dataplane/shared-memory.js';
import type { Principal } from '../../contract/types.js';
import type { TenantRegistry } from '../../tenancy/registry.js';
import type { CodecPool } from './codec/pool.js';
import type { HttpLimits } from './limits.js';
import type { RestrictedFeatures } from '../restricted.js';

/** Who sends `req`: the authenticated principal (multi-tenant mode) or the operator (single-user). */
export type PrincipalOf = (req: FastifyRequest) => Principal;

/** What the server hands the HTTP frontend. */
export interface HttpFrontendOptions {
  /** The only way into the server: nothing under frontend/ touches the manager or model objects. */
  api: ServerApi;
  /** Multi-tenant mode: the tenants authenticating requests. Absent = single-user mode. */
  tenants?: TenantRegistry;
  /** `--http-max-input-size` in bytes. */
  maxInputSize: number;
  /** System shared memory (`--allow-client-shm`; off: every shm call is UNSUPPORTED). */
  shm: SystemSharedMemory;
  /** Connection limits: header / request timeouts, connection cap. */
  limits: HttpLimits;
  logger: Logger;
  /**
   * Serve plain `/infer` requests on Node's request event ahead of Fastify (fast-path.ts;
   * `--http-fast-path`, default true). Off: every request goes through Fastify.
   */
  fastPath?: boolean;
  /** `--http-restricted-api`: API groups answered only with their header (restricted.ts); absent = all open. */
  restricted?: RestrictedFeatures;
  /**
   * The token usage of each OpenAI-compatible request (frontend/openai/), counted per tenant in
   * the metrics; absent = not counted.
   */
  onTokenUsage?: (principal: Principal, model: string, promptTokens: number, completionTokens: number) => void;
  /** `--console`: serve the web console (frontend/console/) under `path` (`--console-path`); absent = not served (404). */
  console?: { path: string };
}

/** What every route handler gets: the options plus the principal of each request. */
export interface FrontendContext extends HttpFrontendOptions {
  principalOf: PrincipalOf;
  /** Workers for large JSON decoding / encoding (codec/pool.ts). */
  codec: CodecPool;
}
