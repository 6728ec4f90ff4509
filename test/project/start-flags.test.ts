/**
 * The node flags `npm start` gives Warden (package.json): a 32 MiB young-generation semi-space, so
 * the hot path's ~35-40 KiB of garbage per request triggers a scavenge every ~700 requests instead
 * of every ~180 (bench/alloc.ts), keeping GC pauses out of the c=1 p99. The benchmark starts Warden
 * with the same flags (bench/ctx.ts startNodeFlags).
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { startNodeFlags } from '../../bench/ctx.js';
import { PROJECT_ROOT } from '../helpers/repo.js';

describe('npm start node flags', () => {
  it('are the semi-space flags, read back by the benchmark', () => {
    expect(startNodeFlags(PROJECT_ROOT)).toEqual(['--min-semi-space-size=32', '--max-semi-space-size=32']);
  });

  it('this node accepts them and V8 applies them', () => {
    const out = execFileSync(process.execPath, [
      ...startNodeFlags(PROJECT_ROOT),
      '-e',
      "process.stdout.write(String(require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size))",
    ]).toString();
    // new space = two semi-spaces at the minimum size (64 MiB), where the default starts at 1-2 MiB
    expect(Number(out)).toBeGreaterThanOrEqual(32 * 1024 * 1024);
  });
});
