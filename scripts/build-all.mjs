#!/usr/bin/env node
// Runs after `npm install`: builds every artefact the default model_repository/ and the tests need,
// from source. Each part has its own script; a part whose script is absent is skipped.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const parts = [
  ['TypeScript host', 'node', ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json']],
  ['native Triton API host + sample backends', 'node', ['scripts/build-native.mjs']],
  ['sandboxed sample backends (WASM components)', 'node', ['scripts/build-wasm.mjs']],
  ['Python backend environment (.venv with numpy)', 'node', ['scripts/build-python.mjs']],
  // optional: the tenant kit's Rust guests build for wasm32-wasip2 (host/src/kit/build-rust.ts);
  // without it `warden backend build` names what is missing and the Rust kit tests skip
  ['Rust wasm32-wasip2 target (tenant kit, optional)', 'rustup', ['target', 'add', 'wasm32-wasip2'], { optional: true }],
];
for (const [what, cmd, args, { optional = false } = {}] of parts) {
  if (args[0].startsWith('scripts/') && !existsSync(join(root, args[0]))) continue;
  process.stdout.write(`[warden build] ${what}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (optional && r.status !== 0) {
    process.stdout.write(`[warden build] ${what} skipped (${r.error ? r.error.message : `exit ${r.status}`})\n`);
    continue;
  }
  if (r.status !== 0) {
    process.stderr.write(`[warden build] ${what} failed (exit ${r.status})\n`);
    process.exit(r.status ?? 1);
  }
}
