/**
 * Starting Warden in a test: {@link startTestServer} (the options every test server shares),
 * {@link startTenantServer} (multi-tenant mode with a tenants file of tokens), and
 * {@link perTestServers} (servers and repositories stopped / removed after each test:
 * `const { repository, serve } = perTestServers();` at the top of a file).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../host/src/server.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { tempRepo, type TempRepo } from './repo.js';

/** What every test server starts with: explicit model control, an ephemeral HTTP port, no metrics port, silent. */
export const TEST_SERVER: Readonly<Partial<ServerOptions>> = Object.freeze({ modelControlMode: 'explicit', httpPort: 0, metricsPort: -1, logLevel: 'silent' });

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
