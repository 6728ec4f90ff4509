import { configDefaults, defineConfig } from 'vitest/config';
import { testTiers } from './test/tiers.js';

// Two tiers (test/tiers.ts): `unit` starts nothing and needs no build artefacts (`npm run test:unit`,
// seconds); `integration` is every other file. `npm test` runs both, every file once.
// Native addons and worker-thread sandboxes are safest in separate processes; two cores here.
const { unit } = testTiers();

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    projects: [
      { extends: true, test: { name: 'unit', include: unit } },
      {
        extends: true,
        test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...unit], globalSetup: ['test/global-setup.ts'] },
      },
    ],
  },
});
