/**
 * File overrides of the load API (spec §3.1): `"file:<version>/<path>": "<base64>"` parameters
 * form an override model directory. It is written atomically (temp dir, fsync, rename) so a failed
 * upload leaves nothing behind.
 */
import { mkdir, mkdtemp, open, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, sep } from 'node:path';
import { invalidArg } from '../core/errors.js';

/** Decoded file overrides: relative path → contents. */
export type FileOverrides = Map<string, Uint8Array>;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Validate one `file:` key and its base64 value.
 * @throws TritonError INVALID_ARG for absolute paths, `..` components, or non-base64 content.
 */
export function decodeFileOverride(key: string, value: unknown): [string, Uint8Array] {
  const rel = key.slice('file:'.length);
  if (typeof value !== 'string') throw invalidArg(`parameter '${key}' must be a base64 string`);
  const clean = normalize(rel);
  if (rel === '' || rel.startsWith('/') || clean.startsWith('..') || clean.split(sep).includes('..')) {
    throw invalidArg(`invalid file override path '${rel}': must be relative to the model directory`);
  }
  const compact = value.replace(/\s+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) {
    throw invalidArg(`file override '${rel}' is not valid base64`);
  }
  return [clean, new Uint8Array(Buffer.from(compact, 'base64'))];
}

/**
 * Write the override files into a fresh directory named `<modelName>` under a new temp dir, and
 * return its path. Files are fsynced before the directory is moved into place.
 */
export async function writeOverrideDirectory(modelName: string, files: FileOverrides, root = join(tmpdir(), 'warden-overrides')): Promise<string> {
  await mkdir(root, { recursive: true });
  const holder = await mkdtemp(join(root, `${modelName}-`));
  const staging = join(holder, '.staging');
  try {
    for (const [rel, data] of files) {
      const p = join(staging, rel);
      await mkdir(dirname(p), { recursive: true });
      const fh = await open(p, 'w');
      try {
        await fh.writeFile(data);
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
    await mkdir(staging, { recursive: true });
    const final = join(holder, modelName);
    await rename(staging, final);
    return final;
  } catch (e) {
    await rm(holder, { recursive: true, force: true });
    throw e;
  }
}

/** Remove an override directory written by {@link writeOverrideDirectory}. */
export async function removeOverrideDirectory(modelPath: string): Promise<void> {
  await rm(dirname(modelPath), { recursive: true, force: true });
}
