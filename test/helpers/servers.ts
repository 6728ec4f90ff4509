/**
 * Servers and repositories a test file starts and that are stopped / removed after each test:
 * `const { repository, serve } = perTestServers();` at the top of a file.
 */
import { afterEach } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../host/src/server.js';
import { tempRepo, type TempRepo } from './repo.js';

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
      const s = await startServer({ modelRepositories: [repo.path], modelControlMode: 'explicit', httpPort: 0, metricsPort: -1, logLevel: 'silent', ...opts });
      cleanups.push(() => s.stop());
      return s;
    },
  };
}
