/**
 * The upload store (DESIGN "Multi-tenancy"): the model directories that the load API's file
 * overrides (spec §3.1) create, kept under a directory Warden owns instead of the shared OS temp
 * directory, so that Warden deletes only what it created and a tenant's upload survives a restart.
 *
 * Layout under the root (`--upload-directory`, default `<first model repository>/.warden-uploads`,
 * which the repository scan skips because its name starts with '.'):
 *
 * ```
 * <root>/.staging/s-<16 hex>/            an upload being written (removed at start if left over)
 * <root>/.blobs/sha256/<hex>             each distinct file content once (./upload-blobs.ts)
 * <root>/<namespace dir>/<model>/g<N>/   generation N: the model directory (version folders; each
 *                                          file a hard link to its blob)
 * <root>/<namespace dir>/<model>/CURRENT the committed generation and its config override (JSON)
 * <root>/<namespace dir>/<model>/CURRENT.tmp-<16 hex>   a pointer being written
 * <root>/<tenant>/.tenant                  the creation identity (uid) of the tenant owning the dir
 * <root>/.removed/<tenant>-<stamp>-<8 hex>/ a removed tenant's directory, moved aside ({@link UploadStore.quarantine})
 * ```
 *
 * The namespace dir is the tenant id (`[A-Za-z0-9_][A-Za-z0-9_-]{0,63}`), or `.operator` for the
 * operator's namespace `''` (a tenant id never starts with '.', so they cannot collide).
 *
 * Tenant identity (DESIGN "Multi-tenancy"): a tenant directory belongs to one creation of the
 * tenant. With a `uid` in the tenants file, the directory records it in `.tenant` when it is
 * created; a directory whose recorded uid is not the tenant's current one (or whose tenant is no
 * longer listed) is never served: the server moves it to `.removed/` ({@link UploadStore.strangers}).
 * The server never reads nor deletes what is there; the operator does.
 *
 * Commit protocol: stage every file under `.staging/` (each file a hard link to its blob, written
 * and fsynced first when its content is new, then every directory fsynced),
 * rename the staged directory to `g<N>` and fsync the model directory; the generation is live only
 * once `CURRENT` names it, written to a temp file, fsynced, renamed over `CURRENT`, then the model
 * directory fsynced. A crash at any point leaves either the old `CURRENT` (and an orphan staging
 * directory or generation, removed at the next start) or the new one, never a partial model.
 * Blobs no generation links any more go with the generations (prune, discard, start-up clean-up).
 *
 * Every path is built from validated plain names (no '/', '\\', NUL, control characters, '.' or
 * '..', at most 255 bytes) and checked to resolve inside the root before anything is written or
 * removed. Start-up clean-up removes only entries matching the store's own naming scheme. Error
 * messages name models and files relative to the model directory, never host paths.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { TritonError } from '../contract/errors.js';
import * as err from './upload-store.errors.js';
import type { ModelKey } from '../contract/types.js';
import type { FileOverrides, HeldBlob } from './overrides.js';

import { BLOB_ALGORITHM_DIR, BLOBS_DIR, UploadBlobs } from './upload-blobs.js';
import { sha256Of } from '../contract/content-digest.js';
import { TENANT_ID_RE } from '../contract/names.js';

/** A namespace's stored files, read once ({@link UploadStore.holdings}). */
export interface BlobHoldings {
  /** Whether one of those files is a hard link to the blob of `sha256` (lowercase hex). */
  holds(sha256: string): Promise<boolean>;
}

/** Directory of the operator's namespace `''` (single-user mode); its uploads are ephemeral. */
export const OPERATOR_DIR = '.operator';
/** Directory where uploads are written before they are moved into place. */
export const STAGING_DIR = '.staging';
/** Where a removed tenant's directory is moved (the server never reads nor deletes it). */
export const QUARANTINE_DIR = '.removed';
const CURRENT = 'CURRENT';
const POINTER_FORMAT = 'warden-upload/1';
/** A tenant directory's owner record: `{ format, uid }` (uid null for an entry without one). */
const OWNER = '.tenant';
const OWNER_FORMAT = 'warden-tenant/1';

const GENERATION = /^g([1-9][0-9]{0,14})$/;
const STAGED = /^s-[0-9a-f]{16}$/;
const CURRENT_TMP = /^CURRENT\.tmp-[0-9a-f]{16}$/;
// eslint-disable-next-line no-control-regex
const FORBIDDEN_CHARS = /[/\\\u0000-\u001f\u007f]/;
/** Longest relative path of one uploaded file, in bytes. */
const MAX_RELATIVE_PATH_BYTES = 1024;
/** Deepest folder below a generation that {@link UploadStore.holdsBlob} looks into. */
const MAX_WALK_DEPTH = 32;

/** A step of the commit protocol, reported to {@link UploadStore.onCommitStep} (tests use it). */
export type CommitStep = 'staging' | 'file' | 'staged' | 'renamed' | 'pointer-staged' | 'switched';
export type CommitHook = (step: CommitStep, info: { key: ModelKey; generation: number; file?: string }) => void | Promise<void>;

/** One generation of a stored model; `modelPath` is the model directory to load from. */
export interface StoredGeneration {
  key: ModelKey;
  generation: number;
  modelPath: string;
  /**
   * A generation just staged: each file's SHA-256 (hex) by relative path, as the store computed
   * it from the bytes it wrote or compared (a load need not hash the files again).
   */
  digests?: ReadonlyMap<string, string>;
}

/** The committed generation of a model and the config override it is loaded with. */
export interface StoredModel extends StoredGeneration {
  configOverride: unknown;
}

export interface StageOptions {
  /**
   * Largest accepted upload: the decoded file bytes plus the config override's JSON. Checked
   * before anything is written (INVALID_ARG).
   */
  maxUploadBytes?: number;
  /**
   * Files named by digest that the namespace holds ({@link UploadStore.heldBlob}): linked to their
   * blobs without reading them, counted in {@link maxUploadBytes} at their size.
   */
  blobs?: ReadonlyMap<string, HeldBlob>;
  /**
   * Multi-tenant mode: the uploading tenant's creation identity (`{ uid: undefined }` for an entry
   * without one). A new tenant directory records it; an existing one must belong to it, else the
   * upload is refused (UNAVAILABLE) until the directory has been moved aside.
   */
  owner?: { uid: string | undefined };
}

/** What start-up clean-up found. Paths are relative to the store root. */
export interface RecoveryReport {
  removed: string[];
  /** Tenant models with a committed generation (to be served again). */
  models: ModelKey[];
}

/**
 * What {@link UploadStore.prune} keeps besides the generations in use: `tenant` keeps the committed
 * generation (durable uploads), `operator` keeps nothing else and drops `CURRENT` once unused.
 */
export type PruneMode = 'tenant' | 'operator';

/**
 * Check that `name` is a plain file name: not empty, not '.' or '..', no '/', '\\', NUL or other
 * control characters, at most 255 bytes of UTF-8.
 * @throws TritonError INVALID_ARG naming `what`
 */
export function checkPlainName(name: string, what: string): void {
  if (typeof name !== 'string' || name === '' || name === '.' || name === '..' || FORBIDDEN_CHARS.test(name) || Buffer.byteLength(name, 'utf8') > 255) {
    throw err.notPlainName(what, quote(name));
  }
}

/**
 * Check a relative path of an uploaded file (`<version>/<file>` etc.): components separated by '/',
 * each a plain name.
 * @throws TritonError INVALID_ARG
 */
export function checkRelativePath(rel: string): string[] {
  if (typeof rel !== 'string' || rel === '' || Buffer.byteLength(rel, 'utf8') > MAX_RELATIVE_PATH_BYTES) {
    throw err.overridePathTooLong(quote(rel), MAX_RELATIVE_PATH_BYTES);
  }
  const parts = rel.split('/');
  for (const p of parts) {
    try {
      checkPlainName(p, 'path component');
    } catch {
      throw err.overridePathNotRelative(quote(rel));
    }
  }
  return parts;
}

/** The directory name of a namespace: `.operator` for `''`, else the (validated) tenant id. */
export function namespaceDir(namespace: string): string {
  if (namespace === '') return OPERATOR_DIR;
  if (typeof namespace !== 'string' || !TENANT_ID_RE.test(namespace)) throw err.namespaceInvalid(quote(namespace));
  return namespace;
}

export interface UploadStoreOptions {
  /** The store's root directory (created if missing). */
  root: string;
  onCommitStep?: CommitHook;
}

export class UploadStore {
  /** Absolute root directory. */
  readonly root: string;
  /**
   * Called at each step of the commit protocol and awaited (a test hook: crash tests slow steps
   * down and announce them so a kill lands inside the protocol).
   */
  onCommitStep: CommitHook | undefined;
  /** Highest generation number handed out, per model: never reused within a process. */
  private readonly lastGeneration = new Map<string, number>();
  private rootReady: Promise<void> | undefined;
  /** The file contents, once each. */
  readonly blobs: UploadBlobs;

  constructor(opts: UploadStoreOptions) {
    this.root = resolve(opts.root);
    this.onCommitStep = opts.onCommitStep;
    this.blobs = new UploadBlobs(this.path(BLOBS_DIR, BLOB_ALGORITHM_DIR), fsyncDir);
  }

  /**
   * Start-up clean-up: remove what a previous process left behind — staging directories,
   * generations `CURRENT` does not name, pointer temp files, and every upload of the operator's
   * namespace (ephemeral). Entries not matching the store's naming scheme are left alone. A missing
   * root is not created here (the first upload creates it).
   * @returns the removed entries and the tenant models to serve again
   */
  async recover(): Promise<RecoveryReport> {
    const report: RecoveryReport = { removed: [], models: [] };
    const rootStat = await lstat(this.root).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (!rootStat) return report;
    const remove = async (...rel: string[]): Promise<void> => {
      await rm(this.path(...rel), { recursive: true, force: true });
      report.removed.push(rel.join('/'));
    };
    for (const e of await readdir(this.path(STAGING_DIR), { withFileTypes: true }).catch(() => [])) {
      if (STAGED.test(e.name) && !e.isSymbolicLink()) await remove(STAGING_DIR, e.name);
    }
    for (const ns of await readdir(this.root, { withFileTypes: true })) {
      if (!ns.isDirectory() || (ns.name !== OPERATOR_DIR && !TENANT_ID_RE.test(ns.name))) continue;
      const operator = ns.name === OPERATOR_DIR;
      for (const m of await readdir(this.path(ns.name), { withFileTypes: true })) {
        if (!m.isDirectory() || !isPlainName(m.name)) continue;
        const entries = await readdir(this.path(ns.name, m.name), { withFileTypes: true });
        let current: number | undefined;
        let damaged = false;
        if (!operator && entries.some((e) => e.name === CURRENT && e.isFile())) {
          try {
            current = (await this.readPointer(ns.name, m.name)).generation;
          } catch {
            damaged = true; // keep everything: the files may still be recovered by hand
          }
        }
        for (const e of entries) {
          if (CURRENT_TMP.test(e.name) && e.isFile()) await remove(ns.name, m.name, e.name);
          else if (operator && e.name === CURRENT && e.isFile()) await remove(ns.name, m.name, e.name);
          else if (!damaged && e.isDirectory() && GENERATION.test(e.name) && generationOf(e.name) !== current) await remove(ns.name, m.name, e.name);
        }
        if (current !== undefined || damaged) report.models.push({ namespace: operator ? '' : ns.name, name: m.name });
        await this.removeIfEmpty(ns.name, m.name);
      }
      await this.removeIfEmpty(ns.name);
    }
    for (const d of new Set(report.removed.map((r) => r.split('/').slice(0, -1).join('/')))) {
      await fsyncDir(this.path(...(d === '' ? [] : d.split('/')))).catch(() => undefined);
    }
    for (const b of await this.blobs.sweep()) report.removed.push(`${BLOBS_DIR}/${BLOB_ALGORITHM_DIR}/${b}`);
    return report;
  }

  /**
   * Write an upload as a new, not yet committed generation (made live by {@link publish}, or
   * removed by {@link discard}). Names, paths and the size are checked before anything is written.
   * @throws TritonError INVALID_ARG (bad name or path, too large), INTERNAL (I/O failure, named by
   *   error code only)
   */
  async stage(key: ModelKey, files: FileOverrides, configOverride: unknown, opts: StageOptions = {}): Promise<StoredGeneration> {
    const nsDir = namespaceDir(key.namespace);
    checkPlainName(key.name, 'model name');
    const entries = checkFiles(files, opts.blobs);
    if (opts.maxUploadBytes !== undefined) {
      let total = configOverride === undefined ? 0 : Buffer.byteLength(JSON.stringify(configOverride) ?? '', 'utf8');
      for (const [, data] of entries) total += data instanceof Uint8Array ? data.byteLength : data.size;
      if (total > opts.maxUploadBytes) {
        throw err.uploadTooLarge(key.name, total, opts.maxUploadBytes);
      }
    }
    const generation = await this.nextGeneration(key, nsDir);
    const info = { key, generation };
    const stagedName = `s-${randomBytes(8).toString('hex')}`;
    const staged = this.path(STAGING_DIR, stagedName);
    const final = this.path(nsDir, key.name, `g${generation}`);
    let renamed = false;
    try {
      await mkdir(staged);
      await this.step('staging', info);
      const dirs = [staged];
      const made = new Set<string>();
      const digests = new Map<string, string>();
      let holdings: BlobHoldings | undefined;
      for (const [rel, data] of entries) {
        const parts = rel.split('/');
        let dir = staged;
        for (const p of parts.slice(0, -1)) {
          dir = join(dir, p);
          if (!made.has(dir)) {
            await mkdir(this.inside(dir));
            made.add(dir);
            dirs.push(dir);
          }
        }
        const dest = this.inside(join(staged, rel));
        if (!(data instanceof Uint8Array)) {
          // named by digest: held by the namespace when resolved; linked if still there, unchanged
          if (!(await this.blobs.linkHeld(dest, data))) throw err.fileDigestUnknown(key.name, quote(rel), data.sha256);
          digests.set(rel, data.sha256);
          await this.step('file', { ...info, file: rel });
          continue;
        }
        // the operator's namespace (single-user mode, or an admin) holds every blob; a tenant's
        // own files are read once for the whole load
        const own = key.namespace === '' || (await (holdings ??= await this.holdings(key.namespace)).holds(await sha256Of(data)));
        const { hash } = await this.blobs.place(dest, data, own);
        digests.set(rel, hash);
        await this.step('file', { ...info, file: rel });
      }
      for (const d of dirs.reverse()) await fsyncDir(d);
      await fsyncDir(this.path(STAGING_DIR));
      await this.step('staged', info);
      await this.mkdirDurably(nsDir);
      if (opts.owner && key.namespace !== '') await this.claim(nsDir, key.name, opts.owner.uid);
      await this.mkdirDurably(nsDir, key.name);
      await rename(staged, final);
      renamed = true;
      await fsyncDir(this.path(nsDir, key.name));
      await fsyncDir(this.path(STAGING_DIR));
      await this.step('renamed', info);
      return { key, generation, modelPath: final, digests };
    } catch (e) {
      await rm(renamed ? final : staged, { recursive: true, force: true }).catch(() => undefined);
      await this.blobs.sweep().catch(() => undefined);
      throw storeError(e, key.name, 'store the files of');
    }
  }

  /**
   * Make `generation` the committed one of its model, loaded with `configOverride` (atomic: a crash
   * leaves the previous pointer or this one).
   * @throws TritonError INTERNAL on I/O failure
   */
  async publish(key: ModelKey, generation: number, configOverride: unknown): Promise<void> {
    const nsDir = namespaceDir(key.namespace);
    checkPlainName(key.name, 'model name');
    const info = { key, generation };
    const tmpName = `${CURRENT}.tmp-${randomBytes(8).toString('hex')}`;
    const tmp = this.path(nsDir, key.name, tmpName);
    const body = JSON.stringify({ format: POINTER_FORMAT, generation, config: configOverride ?? null });
    try {
      await writeDurably(tmp, Buffer.from(body, 'utf8'));
      await this.step('pointer-staged', info);
      await rename(tmp, this.path(nsDir, key.name, CURRENT));
      await fsyncDir(this.path(nsDir, key.name));
      await this.step('switched', info);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw storeError(e, key.name, 'commit the upload of');
    }
  }

  /** Remove a generation that was staged but not published (a failed load). */
  async discard(gen: StoredGeneration): Promise<void> {
    await this.removeGeneration(gen.key, gen.generation);
  }

  /**
   * The committed generation of a model, or undefined if none is stored.
   * @throws TritonError INTERNAL if the stored model is damaged
   */
  async current(key: ModelKey): Promise<StoredModel | undefined> {
    const nsDir = namespaceDir(key.namespace);
    checkPlainName(key.name, 'model name');
    let pointer: { generation: number; config: unknown };
    try {
      pointer = await this.readPointer(nsDir, key.name);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
      throw err.storedModelDamaged(key.name, describe(e));
    }
    const modelPath = this.path(nsDir, key.name, `g${pointer.generation}`);
    const st = await lstat(modelPath).catch(() => undefined);
    if (!st?.isDirectory()) throw err.storedModelDamaged(key.name, `generation ${pointer.generation} is missing`);
    return { key: { namespace: key.namespace, name: key.name }, generation: pointer.generation, modelPath, configOverride: pointer.config ?? undefined };
  }

  /**
   * What `namespace`'s own stored files hold, read once: every plain file of its models'
   * generations (committed, serving or being staged), by identity; {@link BlobHoldings.holds} then
   * answers whether one of them is a hard link to the blob of a digest. The operator's namespace
   * `''` holds every blob. Other tenants' files are never looked at, so no answer depends on them,
   * and the namespace is walked whatever is asked afterwards (the same work either way;
   * docs/tenancy.md "Uploads by digest"). One walk serves every file of a load, so a load naming
   * many files costs one walk of the caller's own files, not one per file.
   * @throws TritonError INVALID_ARG for a namespace that is not a tenant id
   */
  async holdings(namespace: string): Promise<BlobHoldings> {
    const nsDir = namespaceDir(namespace);
    if (namespace === '') return { holds: async (sha256) => (await this.blobs.find(sha256)) !== undefined };
    const files = new Set<string>();
    const walk = async (dir: string, depth: number): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (!isPlainName(e.name)) continue;
        const p = join(dir, e.name);
        if (e.isDirectory() && depth < MAX_WALK_DEPTH) await walk(p, depth + 1);
        else if (e.isFile()) {
          const st = await lstat(p).catch(() => undefined);
          if (st?.isFile()) files.add(`${st.dev}:${st.ino}`);
        }
      }
    };
    for (const m of await readdir(this.path(nsDir), { withFileTypes: true }).catch(() => [])) {
      if (!m.isDirectory() || !isPlainName(m.name)) continue;
      for (const g of await readdir(this.path(nsDir, m.name), { withFileTypes: true }).catch(() => [])) {
        if (g.isDirectory() && GENERATION.test(g.name)) await walk(this.path(nsDir, m.name, g.name), 0);
      }
    }
    return {
      holds: async (sha256) => {
        const found = await this.blobs.find(sha256);
        return found !== undefined && files.has(`${found.dev}:${found.ino}`);
      },
    };
  }

  /**
   * Whether `namespace`'s own stored files include the blob of `sha256` ({@link holdings}, for one digest).
   * @throws TritonError INVALID_ARG for a namespace that is not a tenant id
   */
  async holdsBlob(namespace: string, sha256: string): Promise<boolean> {
    return (await this.holdings(namespace)).holds(sha256);
  }

  /**
   * The blob of `sha256`, verified to hash to its name (./upload-blobs.ts `verify`), when
   * `holder` holds it: a namespace ({@link holdsBlob}) or its {@link holdings} read once for a
   * whole load; `holder` undefined: the caller decided that the caller may name it (the shared
   * store's pointers). Undefined when it is not held, gone or changed.
   */
  async heldBlob(holder: string | BlobHoldings | undefined, sha256: string): Promise<HeldBlob | undefined> {
    const holdings = typeof holder === 'string' ? await this.holdings(holder) : holder;
    if (holdings && !(await holdings.holds(sha256))) return undefined;
    return this.blobs.verify(sha256);
  }

  /** Tenant models with a committed generation. */
  async list(): Promise<ModelKey[]> {
    const out: ModelKey[] = [];
    for (const ns of await readdir(this.root, { withFileTypes: true }).catch(() => [])) {
      if (!ns.isDirectory() || !TENANT_ID_RE.test(ns.name)) continue;
      for (const m of await readdir(this.path(ns.name), { withFileTypes: true })) {
        if (!m.isDirectory() || !isPlainName(m.name)) continue;
        const st = await lstat(this.path(ns.name, m.name, CURRENT)).catch(() => undefined);
        if (st?.isFile()) out.push({ namespace: ns.name, name: m.name });
      }
    }
    return out.sort((a, b) => (a.namespace + '/' + a.name < b.namespace + '/' + b.name ? -1 : 1));
  }

  /**
   * Remove a model's generations that are neither in `inUse` nor (mode `tenant`) committed; in mode
   * `operator` also drop `CURRENT` once its generation is unused. The model directory goes when
   * empty. Callers serialise this with {@link stage} / {@link publish} of the same model.
   */
  async prune(key: ModelKey, inUse: ReadonlySet<number>, mode: PruneMode): Promise<void> {
    const nsDir = namespaceDir(key.namespace);
    checkPlainName(key.name, 'model name');
    const entries = await readdir(this.path(nsDir, key.name), { withFileTypes: true }).catch(() => []);
    let current: number | undefined;
    const hasPointer = entries.some((e) => e.name === CURRENT);
    if (hasPointer) {
      try {
        current = (await this.readPointer(nsDir, key.name)).generation;
      } catch (e) {
        if (mode === 'tenant') throw storeError(e, key.name, 'clean up');
      }
    }
    try {
      if (mode === 'operator' && hasPointer && (current === undefined || !inUse.has(current))) {
        await rm(this.path(nsDir, key.name, CURRENT), { force: true });
      }
      let removed = 0;
      for (const e of entries) {
        const g = GENERATION.test(e.name) && e.isDirectory() ? generationOf(e.name) : undefined;
        if (g === undefined || inUse.has(g) || (mode === 'tenant' && g === current)) continue;
        await rm(this.path(nsDir, key.name, e.name), { recursive: true, force: true });
        removed++;
      }
      await fsyncDir(this.path(nsDir, key.name)).catch(() => undefined);
      await this.removeIfEmpty(nsDir, key.name);
      if (removed > 0) await this.blobs.sweep();
    } catch (e) {
      throw storeError(e, key.name, 'clean up');
    }
  }

  /**
   * Forget a model's committed generation (explicit delete): once this returns, a restart no longer
   * serves it. Its files go with the next {@link prune}.
   */
  async forget(key: ModelKey): Promise<void> {
    const nsDir = namespaceDir(key.namespace);
    checkPlainName(key.name, 'model name');
    try {
      await rm(this.path(nsDir, key.name, CURRENT), { force: true });
      await fsyncDir(this.path(nsDir, key.name)).catch(() => undefined);
    } catch (e) {
      throw storeError(e, key.name, 'delete');
    }
  }

  /**
   * The tenant directories that are not their tenant's (DESIGN "Multi-tenancy"): of an id not in
   * `tenants` (id → the tenant's uid, undefined for an entry without one), or whose recorded owner
   * differs from the tenant's uid (a directory without a record belongs to an entry without uid).
   * Sorted ids; none when the root does not exist.
   */
  async strangers(tenants: ReadonlyMap<string, string | undefined>): Promise<string[]> {
    const out: string[] = [];
    for (const ns of await readdir(this.root, { withFileTypes: true }).catch(() => [])) {
      if (!ns.isDirectory() || !TENANT_ID_RE.test(ns.name)) continue;
      if (!tenants.has(ns.name) || (await this.ownerOf(ns.name)) !== (tenants.get(ns.name) ?? null)) out.push(ns.name);
    }
    return out.sort();
  }

  /**
   * Move a tenant's directory to `.removed/<tenant>-<UTC stamp>-<8 hex>` (one rename: its models
   * leave the store at once; a restart never serves them). Callers unload its models first.
   * @returns the new place relative to the root, or undefined when the tenant had no directory
   * @throws TritonError INVALID_ARG for a namespace that is not a tenant id, INTERNAL on I/O failure
   */
  async quarantine(tenant: string): Promise<string | undefined> {
    if (tenant === '') throw err.operatorNotTenant();
    const nsDir = namespaceDir(tenant);
    const st = await lstat(this.path(nsDir)).catch(() => undefined);
    if (!st?.isDirectory()) return undefined;
    const stamp = new Date()
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z');
    const name = `${nsDir}-${stamp}-${randomBytes(4).toString('hex')}`;
    try {
      await this.mkdirDurably(QUARANTINE_DIR);
      await rename(this.path(nsDir), this.path(QUARANTINE_DIR, name));
      await fsyncDir(this.path(QUARANTINE_DIR));
      await fsyncDir(this.root);
    } catch (e) {
      throw storeError(e, tenant, 'move aside the uploads of tenant');
    }
    return `${QUARANTINE_DIR}/${name}`;
  }

  /** The uid recorded in a tenant directory: null when none is recorded, '' when the record is unreadable. */
  private async ownerOf(nsDir: string): Promise<string | null> {
    let text: string;
    try {
      text = await readFile(this.path(nsDir, OWNER), 'utf8');
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' ? null : '';
    }
    try {
      const p = JSON.parse(text) as { format?: unknown; uid?: unknown };
      if (p.format === OWNER_FORMAT && (p.uid === null || typeof p.uid === 'string')) return p.uid;
    } catch {
      // unreadable: belongs to nobody
    }
    return '';
  }

  /**
   * Make sure the tenant directory `nsDir` belongs to `uid`: record it in a directory that holds no
   * model yet; refuse one that belongs to an earlier tenant of the same id.
   * @throws TritonError UNAVAILABLE when it belongs to another creation of the tenant
   */
  private async claim(nsDir: string, model: string, uid: string | undefined): Promise<void> {
    const recorded = await this.ownerOf(nsDir);
    if (recorded === (uid ?? null)) return;
    let holdsModels = false;
    for (const e of await readdir(this.path(nsDir), { withFileTypes: true })) {
      if (e.isDirectory() && isPlainName(e.name) && (await readdir(this.path(nsDir, e.name))).length > 0) holdsModels = true;
    }
    if (recorded !== null || holdsModels) {
      throw err.tenantUploadsMoving(model);
    }
    if (uid === undefined) return;
    const tmp = this.path(nsDir, `${OWNER}.tmp-${randomBytes(8).toString('hex')}`);
    await writeDurably(tmp, Buffer.from(JSON.stringify({ format: OWNER_FORMAT, uid }), 'utf8'));
    await rename(tmp, this.path(nsDir, OWNER));
    await fsyncDir(this.path(nsDir));
  }

  private async removeGeneration(key: ModelKey, generation: number): Promise<void> {
    const nsDir = namespaceDir(key.namespace);
    checkPlainName(key.name, 'model name');
    await rm(this.path(nsDir, key.name, `g${generation}`), { recursive: true, force: true });
    await this.removeIfEmpty(nsDir, key.name);
    await this.blobs.sweep();
  }

  private async readPointer(nsDir: string, name: string): Promise<{ generation: number; config: unknown }> {
    const text = await readFile(this.path(nsDir, name, CURRENT), 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error('the pointer file is not JSON');
    }
    const p = parsed as { format?: unknown; generation?: unknown; config?: unknown };
    if (
      typeof p !== 'object' ||
      p === null ||
      p.format !== POINTER_FORMAT ||
      typeof p.generation !== 'number' ||
      !Number.isSafeInteger(p.generation) ||
      p.generation < 1
    ) {
      throw new Error('the pointer file has an unknown format');
    }
    return { generation: p.generation, config: p.config };
  }

  private async nextGeneration(key: ModelKey, nsDir: string): Promise<number> {
    await this.ensureRoot();
    const entries = await readdir(this.path(nsDir, key.name), { withFileTypes: true }).catch(() => []);
    let max = 0;
    for (const e of entries) if (GENERATION.test(e.name)) max = Math.max(max, generationOf(e.name));
    if (entries.some((e) => e.name === CURRENT)) {
      const cur = await this.readPointer(nsDir, key.name).catch(() => undefined);
      if (cur) max = Math.max(max, cur.generation);
    }
    // No await from here on: concurrent calls each get a distinct number.
    const id = `${nsDir}/${key.name}`;
    const next = Math.max(max, this.lastGeneration.get(id) ?? 0) + 1;
    this.lastGeneration.set(id, next);
    return next;
  }

  private ensureRoot(): Promise<void> {
    this.rootReady ??= (async () => {
      const first = await mkdir(this.path(STAGING_DIR), { recursive: true });
      if (first === undefined) return;
      // Make the new directories' entries durable, from the root up to the first one created.
      await fsyncDir(this.root);
      for (let d = this.root; d !== dirname(first); d = dirname(d)) await fsyncDir(dirname(d));
    })();
    const p = this.rootReady;
    p.catch(() => {
      if (this.rootReady === p) this.rootReady = undefined;
    });
    return p;
  }

  /** mkdir one store directory; when created, fsync its parent so the entry is durable. */
  private async mkdirDurably(...rel: string[]): Promise<void> {
    const p = this.path(...rel);
    try {
      await mkdir(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return;
      throw e;
    }
    await fsyncDir(this.path(...rel.slice(0, -1)));
  }

  private async removeIfEmpty(...rel: string[]): Promise<void> {
    try {
      await rmdir(this.path(...rel));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw e;
    }
  }

  /** A path under the root from plain names (each checked); throws if it would leave the root. */
  private path(...rel: string[]): string {
    for (const r of rel) if (!isPlainName(r)) throw err.storePathNotPlain();
    return this.inside(join(this.root, ...rel));
  }

  /** `p` itself if it resolves strictly inside the root (or is the root). */
  private inside(p: string): string {
    const r = resolve(p);
    if (r !== this.root && !r.startsWith(this.root.endsWith(sep) ? this.root : this.root + sep)) {
      throw err.storePathOutside();
    }
    return r;
  }

  private async step(step: CommitStep, info: { key: ModelKey; generation: number; file?: string }): Promise<void> {
    if (this.onCommitStep) await this.onCommitStep(step, info);
  }
}

/**
 * Validated, sorted upload entries (bytes, or a blob named by digest); rejects a path that is both
 * a file and a directory, or given twice.
 */
function checkFiles(files: FileOverrides, blobs: ReadonlyMap<string, HeldBlob> = new Map()): [string, Uint8Array | HeldBlob][] {
  const all: [string, Uint8Array | HeldBlob][] = [...files, ...blobs];
  const entries = all.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 1; i < entries.length; i++) if (entries[i]![0] === entries[i - 1]![0]) throw err.fileDigestAndBytes(quote(entries[i]![0]));
  const dirs = new Set<string>();
  for (const [rel] of entries) {
    const parts = checkRelativePath(rel);
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  for (const [rel] of entries) {
    if (dirs.has(rel)) throw err.overridePathFileAndDir(quote(rel));
  }
  return entries;
}

function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !FORBIDDEN_CHARS.test(name) && Buffer.byteLength(name, 'utf8') <= 255;
}

function generationOf(name: string): number {
  return Number(GENERATION.exec(name)![1]);
}

/** Write a new file (never an existing one) and fsync it. */
async function writeDurably(p: string, data: Uint8Array): Promise<void> {
  const fh = await open(p, 'wx', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function fsyncDir(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await fh.sync();
  } catch (e) {
    // Some file systems refuse fsync on directories; the rename is then as durable as they allow.
    if ((e as NodeJS.ErrnoException).code !== 'EINVAL' && (e as NodeJS.ErrnoException).code !== 'EBADF') throw e;
  } finally {
    await fh.close();
  }
}

/** A store failure as a TritonError without host paths (I/O errors are named by their code). */
function storeError(e: unknown, model: string, what: string): TritonError {
  if (e instanceof TritonError) return e;
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return err.storeFull(what, model);
  return err.storeFailed(what, model, describe(e));
}

/** An error's description without paths: the errno code, or the message of a non-I/O error. */
function describe(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (typeof code === 'string') return code;
  return e instanceof Error ? e.message : String(e);
}

/** A name for an error message: JSON-quoted, control characters escaped, long names cut. */
function quote(name: unknown): string {
  const s = typeof name === 'string' ? name : String(name);
  const cut = s.length > 80 ? `${s.slice(0, 80)}…` : s;
  return JSON.stringify(cut).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
