/**
 * Model repository scanning (spec §5.1): models are the sub-directories of each repository path;
 * versions are sub-directories whose names are positive integers not starting with "0".
 */
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelVersionPolicy } from '../contract/model-config.js';

const VERSION_DIR = /^[1-9][0-9]*$/;

/** Version numbers present in a model directory, ascending. Non-numeric names and "0…" are ignored. */
export async function listVersions(modelPath: string): Promise<number[]> {
  const entries = await readdir(modelPath, { withFileTypes: true }).catch(() => []);
  const versions: number[] = [];
  for (const e of entries) {
    if (!VERSION_DIR.test(e.name)) continue;
    const isDir = e.isDirectory() || (e.isSymbolicLink() && (await stat(join(modelPath, e.name)).catch(() => undefined))?.isDirectory());
    if (!isDir) continue;
    const v = Number(e.name);
    if (Number.isSafeInteger(v)) versions.push(v);
  }
  return versions.sort((a, b) => a - b);
}

/**
 * The versions a version policy selects from those present (spec §5.3): `latest` = the
 * `num_versions` highest, `all` = every one, `specific` = those listed that exist.
 */
export function selectVersions(policy: ModelVersionPolicy, available: readonly number[]): number[] {
  if ('all' in policy) return [...available];
  if ('specific' in policy) return available.filter((v) => policy.specific.versions.includes(v));
  const n = Math.max(1, policy.latest.num_versions);
  return available.slice(-n);
}

/**
 * A fingerprint of everything under a model directory (names, sizes, mtimes), used by poll mode to
 * detect added / removed / modified versions, configs and files.
 */
export async function fingerprintModel(modelPath: string): Promise<string> {
  const h = createHash('sha256');
  async function walk(dir: string, rel: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const p = join(dir, e.name);
      const r = `${rel}/${e.name}`;
      const st = await stat(p).catch(() => undefined);
      if (!st) continue;
      if (st.isDirectory()) {
        h.update(`d:${r}\n`);
        await walk(p, r);
      } else {
        h.update(`f:${r}:${st.size}:${st.mtimeMs}\n`);
      }
    }
  }
  await walk(modelPath, '');
  return h.digest('hex');
}
