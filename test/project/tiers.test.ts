/**
 * The test tiers (test/tiers.ts): every test file is in exactly one tier, and a file lands in the
 * integration tier for what it or a test helper it imports starts, not for its folder. The
 * sources judged are test/fixtures/tiers/ (read, never run).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../host/src/project.js';
import { startsSomething, testFiles, testTiers } from '../tiers.js';

const fixture = (name: string): string => join(PROJECT_ROOT, 'test/fixtures/tiers', name);

describe('test tiers', () => {
  it('split the test files in two, each file once; servers and engines are integration, the scheduler unit', () => {
    const { unit, integration } = testTiers();
    expect([...unit, ...integration].sort()).toEqual(testFiles());
    expect(unit).toEqual(
      expect.arrayContaining([
        'test/scheduler/scheduler.test.ts',
        'test/scheduler/queue.test.ts',
        'test/config/pbtxt-parse.test.ts',
        'test/tenancy/parse.test.ts',
        'test/project/tiers.test.ts',
      ]),
    );
    expect(integration).toEqual(
      expect.arrayContaining([
        'test/frontend/http/infer.test.ts',
        'test/project/start-flags.test.ts',
        'test/backends/wasm/hostile.test.ts',
        'test/compat/kserve.test.ts',
      ]),
    );
  });

  it('judge a file by what it and its test helpers import and call; type-only imports start nothing', () => {
    expect(startsSomething(fixture('via-helper.ts'))).toBe('test/fixtures/tiers/helpers/spawns.ts imports node:child_process');
    expect(startsSomething(fixture('type-only.ts'))).toBeUndefined();
    expect(startsSomething(fixture('calls-fetch.ts'))).toMatch(/^test\/fixtures\/tiers\/calls-fetch\.ts calls fetch\($/);
    expect(startsSomething(fixture('dynamic-server.ts'))).toBe('test/fixtures/tiers/dynamic-server.ts imports ../../../host/src/backends/wasm/index.js');
  });
});
