#!/usr/bin/env node
// Writes the web console's screenshots, docs/console/<view>.png (1200x800; docs/console.md): runs
// the console's browser test (test/frontend/console/console.test.ts) with CONSOLE_SCREENSHOTS=1,
// which captures each view as the test drives it. Needs a Chromium binary (`apt-get install
// chromium`, or CHROMIUM_PATH) and the built test fixtures (`npm install` builds them).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const r = spawnSync('npx', ['vitest', 'run', 'test/frontend/console/console.test.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, CONSOLE_SCREENSHOTS: '1' },
});
process.exit(r.status ?? 1);
