/**
 * Starting Warden in a test: {@link startTestServer} (the options every test server shares),
 * {@link startTenantServer} (multi-tenant mode with a tenants file of tokens), and
 * {@link perTestServers} (servers and repositories stopped / removed after each test:
 * `const { repository, serve } = perTestServers();` at the top of a file), and
 * {@link serverPerSuite} / {@link tenantServerPerSuite} (one server for every test of a file or
 * `describe` block, with its repository and a gRPC client).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../host/src/server.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { tritonGrpcClient, type TritonGrpcClient } from './grpc.js';
import { tempRepo, type TempRepo } from './repo.js';

/**
 * The HTTP path test servers take unless a test names one: the server's default (the native data
 * path where it can run), or `WARDEN_TEST_HTTP_DATA_PATH=js|native` — to run the suite on the other
 * path (`WARDEN_TEST_HTTP_DATA_PATH=js npx vitest run`; servers a test starts from the CLI keep the default).
 */
export const TEST_HTTP_DATA_PATH: Partial<ServerOptions> = ((v) => {
  if (v === undefined || v === '') return {};
  if (v !== 'js' && v !== 'native') throw new Error(`WARDEN_TEST_HTTP_DATA_PATH must be js or native, got '${v}'`);
  return { httpDataPath: v };
})(process.env.WARDEN_TEST_HTTP_DATA_PATH);

/** What every test server starts with: explicit model control, an ephemeral HTTP port, no metrics port, silent. */
export const TEST_SERVER: Readonly<Partial<ServerOptions>> = Object.freeze({
  modelControlMode: 'explicit',
  httpPort: 0,
  metricsPort: -1,
  logLevel: 'silent',
  ...TEST_HTTP_DATA_PATH,
});

/** Warden on `repo` (or several repositories, in order) with {@link TEST_SERVER}'s options, `opts` over them. The caller stops it. */
export function startTestServer(repo: TempRepo | string | readonly (TempRepo | string)[], opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const repos = Array.isArray(repo) ? repo : [repo];
  return startServer({ ...TEST_SERVER, modelRepositories: repos.map((r: TempRepo | string) => (typeof r === 'string' ? r : r.path)), ...opts });
}

/**
 * A tenant of a test tenants file (docs/tenancy.md): `token` is written as `tokens: [hashToken(token)]`,
 * `role` defaults to `tenant`, every other field (`shared_models`, `quotas`, `config_bounds`, …) as given.
 */
export type TestTenant = { id: string; token: string; role?: 'tenant' | 'admin' } & Record<string, unknown>;

/**
 * The ways Warden answers HTTP, as `[label, options]` rows for `describe.each`: Fastify's routes
 * and the `/infer` fast path on the JavaScript listener, a front-end thread (the main listener
 * off), and the native data path (the default where the addon has it).
 */
export const HTTP_FRONT_ENDS = [
  ['Fastify', { httpFastPath: false, httpDataPath: 'js' }],
  ['fast path', { httpFastPath: true, httpDataPath: 'js' }],
  ['a front-end thread', { httpThreads: 1, httpMainListener: false }],
  ['the native data path', { httpDataPath: 'native' }],
] as const satisfies readonly (readonly [string, Partial<ServerOptions>])[];

/** A distinct bearer token for each of `ids` (`<id>-token-` and a fixed tail): the tokens of a test tenants file's tenants. */
export function testTokens<Id extends string>(...ids: Id[]): Record<Id, string> {
  return Object.fromEntries(ids.map((id) => [id, `${id}-token-0123456789abcdefghijklmnopqrstuv`])) as Record<Id, string>;
}

/** Write `tenants` to `path` as a tenants file (`{ "tenants": [...] }`, tokens hashed). */
export function writeTenantsFile(path: string, tenants: readonly TestTenant[]): void {
  const entries = tenants.map(({ token, role = 'tenant', ...rest }) => ({ ...rest, role, tokens: [hashToken(token)] }));
  writeFileSync(path, JSON.stringify({ tenants: entries }));
}

/** Options of {@link startTenantServer}: the server's, and where uploads go. */
export type TenantServerOptions = Partial<ServerOptions> & {
  /** Uploads in the temporary folder's `uploads/` instead of the server's default beneath the repository. */
  separateUploads?: boolean;
};

/** A server in multi-tenant mode and the temporary folder of its tenants file (and uploads). */
export interface TenantServer {
  server: RunningServer;
  /** The folder: `tenants.json`, and `uploads/` with {@link TenantServerOptions.separateUploads}. */
  dir: string;
  tenantsFile: string;
  /** Stop the server, then remove the folder (the repository stays the caller's). */
  stop(): Promise<void>;
}

/**
 * Warden in multi-tenant mode on `repo`: `tenants` written to `tenants.json` in a fresh temporary
 * folder, {@link TEST_SERVER}'s options, `opts` over them.
 */
export async function startTenantServer(repo: TempRepo | string, tenants: readonly TestTenant[], opts: TenantServerOptions = {}): Promise<TenantServer> {
  const { separateUploads, ...serverOpts } = opts;
  const dir = mkdtempSync(join(tmpdir(), 'warden-tenants-'));
  const tenantsFile = join(dir, 'tenants.json');
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    writeTenantsFile(tenantsFile, tenants);
    const server = await startTestServer(repo, { tenantsFile, ...(separateUploads ? { uploadDirectory: join(dir, 'uploads') } : {}), ...serverOpts });
    return {
      server,
      dir,
      tenantsFile,
      async stop() {
        await server.stop();
        remove();
      },
    };
  } catch (e) {
    remove();
    throw e;
  }
}

export function perTestServers(): {
  /** A temporary repository holding `simple` (or `examples`). */
  repository(examples?: string[]): TempRepo;
  /** Warden on `repo` in explicit mode with ephemeral ports, silent; `opts` override. */
  serve(repo: TempRepo, opts?: Partial<ServerOptions>): Promise<RunningServer>;
  /** Run `cleanup` after the current test (last registered, first run). */
  defer(cleanup: () => Promise<void> | void): void;
} {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return {
    defer(cleanup) {
      cleanups.push(cleanup);
    },
    repository(examples = ['simple']) {
      const repo = tempRepo(examples);
      cleanups.push(() => repo.cleanup());
      return repo;
    },
    async serve(repo, opts = {}) {
      const s = await startTestServer(repo, opts);
      cleanups.push(() => s.stop());
      return s;
    },
  };
}

/** A server shared by the tests of a file or `describe` block ({@link serverPerSuite}); each getter throws before the suite's server started. */
export interface SuiteServer {
  /** The repository the setup returned (removed after the suite). */
  readonly repo: TempRepo;
  readonly server: RunningServer;
  /** A gRPC client of {@link server} (the server needs `grpcPort`), opened on first use and closed after the suite. */
  readonly client: TritonGrpcClient;
}

/** A {@link SuiteServer} in multi-tenant mode ({@link tenantServerPerSuite}). */
export interface TenantSuiteServer extends SuiteServer {
  /** The tenants file's folder and its server ({@link startTenantServer}). */
  readonly tenancy: TenantServer;
}

/**
 * One server for every test of the current file or `describe` block: `setup` runs in a `beforeAll`
 * (timeout `timeoutMs`, else the configured hook timeout) and returns the repository and the
 * server's options over {@link TEST_SERVER}'s; an `afterAll` closes the client, stops the server
 * and removes the repository. `const s = serverPerSuite(async () => ({ repo: tempRepo(['simple']), opts: { grpcPort: 0 } }));`
 * then `s.server`, `s.client` in the tests.
 */
export function serverPerSuite(setup: () => Promise<{ repo: TempRepo; opts?: Partial<ServerOptions> }>, timeoutMs?: number): SuiteServer {
  return suite(async () => {
    const { repo, opts } = await setup();
    return {
      repo,
      start: async () => {
        const server = await startTestServer(repo, opts);
        return { server, stop: () => server.stop() };
      },
    };
  }, timeoutMs);
}

/**
 * {@link serverPerSuite} in multi-tenant mode: `setup` returns the repository, the tenants
 * ({@link TestTenant}) and {@link startTenantServer}'s options; the tenants file's folder is removed
 * with the server.
 */
export function tenantServerPerSuite(
  setup: () => Promise<{ repo: TempRepo; tenants: readonly TestTenant[]; opts?: TenantServerOptions }>,
  timeoutMs?: number,
): TenantSuiteServer {
  let tenancy: TenantServer | undefined;
  const s = suite(async () => {
    const { repo, tenants, opts } = await setup();
    return {
      repo,
      start: async () => {
        tenancy = await startTenantServer(repo, tenants, opts);
        const { server, stop } = tenancy;
        return { server, stop };
      },
    };
  }, timeoutMs);
  return Object.defineProperty(s, 'tenancy', { get: () => started(tenancy, 'tenancy') }) as TenantSuiteServer;
}

function started<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`the suite's ${what} is not there: its beforeAll has not run or failed`);
  return value;
}

/** The hooks behind {@link serverPerSuite}: `prepare` gives the repository (removed after the suite even when the start fails) and how to start and stop the server. */
function suite(
  prepare: () => Promise<{ repo: TempRepo; start(): Promise<{ server: RunningServer; stop(): Promise<void> }> }>,
  timeoutMs?: number,
): SuiteServer {
  let repo: TempRepo | undefined;
  let server: { server: RunningServer; stop(): Promise<void> } | undefined;
  let client: TritonGrpcClient | undefined;
  beforeAll(async () => {
    const prepared = await prepare();
    repo = prepared.repo;
    server = await prepared.start();
  }, timeoutMs);
  afterAll(async () => {
    client?.close();
    await server?.stop();
    repo?.cleanup();
  });
  return {
    get repo() {
      return started(repo, 'repository');
    },
    get server() {
      return started(server, 'server').server;
    },
    get client() {
      client ??= tritonGrpcClient(started(server, 'server').server.grpcUrl!);
      return client;
    },
  };
}
