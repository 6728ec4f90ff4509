/** The file watcher behind hot reload: change events, the poll fallback, unchanged content, read errors. */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchFileContent, type FileWatch } from '../../host/src/tenancy/watch.js';
import { sleep, until } from '../helpers/wait.js';

describe('watchFileContent', () => {
  let dir: string;
  let path: string;
  let w: FileWatch | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'warden-watch-'));
    path = join(dir, 'f.json');
    writeFileSync(path, 'one');
  });
  afterEach(() => {
    w?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports new content from fs.watch events, once per distinct content', async () => {
    const seen: string[] = [];
    w = watchFileContent(path, 'one', (t) => void seen.push(t), { debounceMs: 10, pollIntervalMs: 0 });
    writeFileSync(path, 'two');
    await until(() => seen.length === 1);
    writeFileSync(path, 'two'); // same bytes: no call
    writeFileSync(join(dir, 'other.json'), 'x'); // another file: ignored
    await w.check();
    expect(seen).toEqual(['two']);
  });

  it('sees a Kubernetes-style ConfigMap update (a ..data symlink swapped) through fs.watch', async () => {
    for (const [d, text] of [
      ['v1', 'one'],
      ['v2', 'two'],
    ]) {
      mkdirSync(join(dir, d));
      writeFileSync(join(dir, d, 'tenants.json'), text);
    }
    symlinkSync('v1', join(dir, '..data'));
    const linked = join(dir, 'tenants.json.link');
    symlinkSync('..data/tenants.json', linked);
    const seen: string[] = [];
    w = watchFileContent(linked, 'one', (t) => void seen.push(t), { debounceMs: 10, pollIntervalMs: 0 });
    symlinkSync('v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await until(() => seen.length === 1);
    expect(seen).toEqual(['two']);
  });

  it('falls back to polling when fs.watch is not used', async () => {
    const seen: string[] = [];
    w = watchFileContent(path, 'one', (t) => void seen.push(t), { debounceMs: 10, pollIntervalMs: 30, useFsWatch: false });
    writeFileSync(path, 'three');
    await until(() => seen.includes('three'));
  });

  it('reports a read error once, and recovers', async () => {
    const errors: string[] = [];
    const seen: string[] = [];
    w = watchFileContent(path, 'one', (t) => void seen.push(t), { debounceMs: 10, pollIntervalMs: 30, onError: (e) => errors.push(e.code ?? '') });
    unlinkSync(path);
    await until(() => errors.length > 0);
    await sleep(150);
    expect(errors).toEqual(['ENOENT']);
    writeFileSync(path, 'back');
    await until(() => seen.includes('back'));
  });
});
