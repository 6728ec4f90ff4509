import { defineConfig } from 'vitest/config';

// Native addons and worker-thread sandboxes are safest in separate processes; two cores here.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
