#!/usr/bin/env node
// Builds the tools that check the deployment artefacts (deploy/) from their Go modules into
// .cache/tools/: helm (lint, template) and kubeconform (schema validation). Idempotent: a tool
// whose pinned version is already built is skipped (a stamp file beside it records the version).
// Prints one JSON line: { "<tool>": { "path", "version", "built": bool, "seconds" } | { "error" } }.
// Exit status 0 even when a build fails (the caller decides: the deploy test skips a tool only when
// its module could not be downloaded, and says so); `--strict` exits 1 on any failure.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = join(root, '.cache', 'tools');
const binDir = join(toolsDir, 'bin');

/** The pinned tools: Go package path, module version, binary name. */
export const TOOLS = {
  helm: { pkg: 'helm.sh/helm/v3/cmd/helm', version: 'v3.22.0' },
  kubeconform: { pkg: 'github.com/yannh/kubeconform/cmd/kubeconform', version: 'v0.8.0' },
};

function goBinary() {
  for (const c of [process.env.GO, '/usr/local/go/bin/go', 'go']) {
    if (!c) continue;
    const r = spawnSync(c, ['version'], { encoding: 'utf8' });
    if (r.status === 0) return c;
  }
  return undefined;
}

function build(name, { pkg, version }, go) {
  const path = join(binDir, name);
  const stamp = `${path}.version`;
  if (existsSync(path) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === `${pkg}@${version}`) {
    return { path, version, built: false, seconds: 0 };
  }
  if (!go) return { error: 'no Go toolchain (looked for $GO, /usr/local/go/bin/go, go on PATH)', download: false };
  const started = process.hrtime.bigint();
  // GOBIN puts the binary straight into .cache/tools/bin; the module cache is Go's own (shared).
  const r = spawnSync(go, ['install', '-trimpath', `${pkg}@${version}`], {
    cwd: toolsDir,
    env: { ...process.env, GOBIN: binDir, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) {
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-8).join('\n');
    // A failure to reach the module proxy is "cannot download"; anything else is a build failure.
    const download = /dial tcp|no such host|connection refused|i\/o timeout|TLS handshake|unrecognized import path|module lookup disabled|reading .*: 40[34]/.test(out);
    return { error: out || `go install exited ${r.status}`, download, seconds };
  }
  writeFileSync(stamp, `${pkg}@${version}\n`);
  return { path, version, built: true, seconds: Math.round(seconds * 10) / 10 };
}

mkdirSync(binDir, { recursive: true });
const go = goBinary();
const result = {};
for (const [name, spec] of Object.entries(TOOLS)) result[name] = build(name, spec, go);
process.stdout.write(`${JSON.stringify(result)}\n`);
if (process.argv.includes('--strict') && Object.values(result).some((r) => 'error' in r)) process.exit(1);
