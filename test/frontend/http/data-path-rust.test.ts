/**
 * The native data path's own unit tests (native/rust/data-path: the decoder's refusals of what it
 * does not serve and of hostile nesting and lengths, ECMAScript number printing, JSON string
 * escaping, the gRPC wire details), run with `cargo test` in the release profile the build already
 * compiled the dependencies in, so only the crate itself is built here.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../helpers/repo.js';

describe('native/rust/data-path unit tests', () => {
  it('pass', () => {
    const workspace = join(PROJECT_ROOT, 'native', 'rust');
    const r = spawnSync('cargo', ['test', '--release', '--locked', '-p', 'warden-data-path'], {
      cwd: workspace,
      encoding: 'utf8',
      env: { ...process.env, CARGO_TARGET_DIR: join(workspace, 'target') },
      timeout: 600_000,
    });
    const out = `${r.stdout}\n${r.stderr}`;
    expect(r.status, out.slice(-4000)).toBe(0);
    const passed = [...out.matchAll(/test result: ok\. (\d+) passed; 0 failed/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(passed, out.slice(-4000)).toBeGreaterThanOrEqual(10);
  }, 600_000);
});
