/**
 * System (POSIX) client shared memory (spec §3.3), protocol-neutral: the regions clients register
 * with `key` = a POSIX shm name (`shm_open`), inputs read from and outputs written to them. Both
 * frontends (HTTP `/v2/systemsharedmemory/...`, gRPC `SystemSharedMemory*`) call this.
 *
 * A POSIX shm object is the file `/dev/shm/<name>`. The key is hostile: it must be one plain file
 * name (an optional leading '/', then no '/', NUL or control characters, not '.' / '..', at most
 * 255 bytes); the file is opened with O_NOFOLLOW (a symlink planted in /dev/shm is refused) and
 * must be a regular file at least `offset + byte_size` long. The descriptor stays open while the
 * region is registered (as Triton keeps its mapping). Data moves with pread / pwrite on that
 * descriptor — the same pages the client has mapped — so no native code runs.
 *
 * Names starting with `warden-` are refused for every client: Warden's own processes keep their
 * shared memory there (the Python backend's stub IPC), and a client must never map it. Names
 * starting with Triton's `triton_python_backend_shm_region_` are refused too, with Triton's text
 * (server `common.cc` ValidateSharedMemoryKey): Triton's own Python backend keeps its regions there.
 *
 * A region an inference uses is held by it (a {@link ShmAccess} lease) from decoding until its last
 * response; unregistering it meanwhile marks it and it stays listed until the last holder releases
 * it, as Triton's `SharedMemoryManager::UnregisterHelper` (`awaiting_unregister_`).
 *
 * Regions belong to the principal that registered them: names are per namespace (a tenant sees,
 * uses and unregisters only its own), a tenant's keys must start with `/<tenant>.` (see
 * {@link tenantShmPrefix}), and a key registered by one namespace cannot be registered by another. Counts are capped per namespace;
 * one read is capped at `maxReadBytes` (the request-size bound of the frontends).
 */
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import * as msg from './shared-memory.errors.js';
import type { Principal } from '../contract/types.js';

/** `GET /v2/systemsharedmemory/status` entry (spec §3.3); gRPC `SystemSharedMemoryStatusResponse.RegionStatus`. */
export interface SystemShmRegionStatus {
  name: string;
  key: string;
  /** Offset of the region in the shm object, bytes. */
  offset: number;
  /** Size of the region, bytes. */
  byte_size: number;
}

export interface SystemSharedMemoryOptions {
  /** `--allow-client-shm` (default false: every call answers {@link clientShmDisabled}). */
  enabled: boolean;
  /** Multi-tenant mode: tenants' keys must start with `/<tenant>.` ({@link tenantShmPrefix}). */
  multiTenant: boolean;
  /** Largest single read, bytes (an input taken from a region). */
  maxReadBytes: number;
  /** Where POSIX shm objects live (default `/dev/shm`; tests may point elsewhere). */
  root?: string;
  /** Regions one namespace may hold (default 64; each holds a file descriptor). */
  maxRegionsPerNamespace?: number;
}

/** The UNSUPPORTED answer while client shared memory is off (Triton's default). */
export const clientShmDisabled = msg.clientShmDisabled;

/** Where a client placed one tensor: region name, offset in the region and size, bytes. */
export interface ShmTarget {
  region: string;
  offset: number;
  byteSize: number;
}

/**
 * One principal's view of its regions for one inference request, for a frontend's decoder (inputs)
 * and encoder (outputs). Every region it reads from or {@link hold}s stays registered until
 * {@link release} (called once, when the request's last response is done).
 */
export interface ShmAccess {
  /** A copy of an input's bytes; the region is held. @throws TritonError (see SystemSharedMemory.read) */
  read(target: ShmTarget): Uint8Array;
  /** Hold the region of an output the client placed in shared memory. @throws TritonError NOT_FOUND, INVALID_ARG (bounds) */
  hold(target: ShmTarget): void;
  /** Write an output's bytes. @throws TritonError (see SystemSharedMemory.write) */
  write(target: ShmTarget, data: Uint8Array, output: string): void;
  /** Release every held region (a region unregistered meanwhile is removed now). Idempotent. */
  release(): void;
}

interface Region extends SystemShmRegionStatus {
  namespace: string;
  fd: number;
  /** Inference requests holding the region. */
  users: number;
  /** Unregistered while held: removed when the last holder releases it. */
  awaitingUnregister: boolean;
}

const MAX_NAME_BYTES = 255;
/** Shm object names Warden's own processes use; never a client region. */
export const RESERVED_SHM_PREFIX = 'warden-';
/** Triton's reserved prefix (server `common.h` kTritonSharedMemoryRegionPrefix): Triton's Python backend's regions. */
export const TRITON_RESERVED_SHM_PREFIX = 'triton_python_backend_shm_region_';

/**
 * The file-name prefix of the shm keys a tenant may register: its id, then '.' (DESIGN
 * "Multi-tenancy": tenant identity in every shared key). '.' is outside the tenant id alphabet
 * (`[A-Za-z0-9_-]`, tenancy/types.ts), so the part of a name before its first '.' is exactly one
 * tenant id: no tenant's prefix is a prefix of another tenant's keys (with '_', tenant `acme` could
 * register `/acme_corp_x`, a key of tenant `acme_corp`).
 */
export function tenantShmPrefix(tenant: string): string {
  return `${tenant}.`;
}

/**
 * The file name of a POSIX shm key. @throws TritonError INVALID_ARG for anything but one plain name
 */
export function shmKeyFile(key: string): string {
  const name = key.startsWith('/') ? key.slice(1) : key;
  // eslint-disable-next-line no-control-regex
  if (name === '' || name === '.' || name === '..' || name.includes('/') || /[\u0000-\u001f\u007f]/.test(name) || Buffer.byteLength(name) > MAX_NAME_BYTES) {
    throw msg.shmKeyNotPosixName(JSON.stringify(key).slice(1, -1));
  }
  if (name.startsWith(RESERVED_SHM_PREFIX)) throw msg.shmKeyReservedByServer(key, RESERVED_SHM_PREFIX);
  return name;
}

/**
 * {@link shmKeyFile} for a register request of region `region`, with Triton's refusal of its
 * reserved prefix first (server `common.cc` ValidateSharedMemoryKey, its text).
 * @throws TritonError INVALID_ARG
 */
function registerKeyFile(region: string, key: string): string {
  if (key.replace(/^\/+/, '').startsWith(TRITON_RESERVED_SHM_PREFIX)) {
    throw msg.shmKeyReservedByTriton(region, key, TRITON_RESERVED_SHM_PREFIX);
  }
  return shmKeyFile(key);
}

/** An offset / size from a request: a non-negative safe integer. @throws TritonError INVALID_ARG */
function count(v: unknown, what: string): number {
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw msg.shmCountInvalid(what);
  return n;
}

export class SystemSharedMemory {
  private readonly regions = new Map<string, Region>();
  private readonly root: string;
  private readonly maxPerNamespace: number;

  constructor(private readonly opts: SystemSharedMemoryOptions) {
    this.root = opts.root ?? '/dev/shm';
    this.maxPerNamespace = opts.maxRegionsPerNamespace ?? 64;
  }

  get enabled(): boolean {
    return this.opts.enabled;
  }

  private check(): void {
    if (!this.opts.enabled) throw clientShmDisabled();
  }

  private id(principal: Principal, name: string): string {
    return `${principal.namespace}\u0000${name}`;
  }

  /**
   * Register `name` over `[offset, offset + byteSize)` of the shm object `key`.
   * @throws TritonError UNSUPPORTED (disabled), ALREADY_EXISTS (name taken, also while an
   *   unregistered region waits for its inferences), INVALID_ARG (bad or reserved key, offset or
   *   size; object too small; key registered by another namespace; not a regular file), INTERNAL
   *   "Unable to open shared memory region" (no such object: Triton's code, server
   *   `shared_memory_manager.cc` OpenSharedMemoryRegion), AccessError `forbidden` (a tenant's key without
   *   its prefix, too many regions)
   */
  register(principal: Principal, name: string, key: string, offset: unknown, byteSize: unknown): void {
    this.check();
    if (name === '') throw msg.shmRegionNameMissing('system');
    const file = registerKeyFile(name, key);
    const off = count(offset, 'offset');
    const size = count(byteSize, 'byte_size');
    if (this.regions.has(this.id(principal, name))) {
      throw msg.shmRegionExists(name);
    }
    const prefix = tenantShmPrefix(principal.namespace);
    if (this.opts.multiTenant && principal.role === 'tenant' && !file.startsWith(prefix)) {
      throw msg.shmKeyOutsideTenant(principal.namespace, prefix);
    }
    let mine = 0;
    for (const r of this.regions.values()) {
      if (r.namespace === principal.namespace) mine++;
      else if (shmKeyFile(r.key) === file) throw msg.shmKeyTaken(key);
    }
    if (mine >= this.maxPerNamespace) throw msg.shmRegionCap(this.maxPerNamespace);
    let fd: number;
    try {
      fd = openSync(join(this.root, file), constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw msg.shmOpenMissing(key);
      throw msg.shmOpenRefused(key, code === 'ELOOP' ? 'a symbolic link' : (code ?? 'error'));
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw msg.shmOpenRefused(key, 'not a shared memory object');
      if (off + size > st.size) {
        throw msg.shmRegionPastObject(name, off, size, st.size, key);
      }
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    this.regions.set(this.id(principal, name), {
      name,
      key,
      offset: off,
      byte_size: size,
      namespace: principal.namespace,
      fd,
      users: 0,
      awaitingUnregister: false,
    });
  }

  /**
   * Unregister `name` ('' = every region of the principal). Unknown names are no error (as Triton).
   * A region an inference holds stays registered (and listed) until that inference ends.
   * @throws UNSUPPORTED when disabled
   */
  unregister(principal: Principal, name: string): void {
    this.check();
    for (const [id, r] of this.regions) {
      if (r.namespace !== principal.namespace || (name !== '' && r.name !== name)) continue;
      if (r.users > 0) r.awaitingUnregister = true;
      else this.remove(id, r);
    }
  }

  private remove(id: string, r: Region): void {
    if (this.regions.get(id) !== r) return;
    closeSync(r.fd);
    this.regions.delete(id);
  }

  /**
   * The principal's regions as CUDA shared memory status (spec §3.3; a server without GPUs holds
   * none, as Triton built without GPUs): `[]`, or for a name Triton's NOT_FOUND texts
   * (server `shared_memory_manager.cc` GetStatus).
   * @throws TritonError NOT_FOUND
   */
  cudaStatus(principal: Principal, name: string): [] {
    if (name === '') return [];
    if (this.regions.has(this.id(principal, name))) {
      throw msg.shmRegionIsSystem(name);
    }
    throw msg.shmRegionNotFound(name, 'cuda');
  }

  /**
   * Status of `name` ('' = every region of the principal), sorted by name.
   * @throws TritonError NOT_FOUND "Unable to find system shared memory region: '<name>'"
   */
  status(principal: Principal, name: string): SystemShmRegionStatus[] {
    const out = [...this.regions.values()].filter((r) => r.namespace === principal.namespace && (name === '' || r.name === name));
    if (name !== '' && out.length === 0) throw msg.shmRegionNotFound(name, 'system');
    return out.map(({ name: n, key, offset, byte_size }) => ({ name: n, key, offset, byte_size })).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  private region(principal: Principal, name: string, offset: number, size: number): Region {
    this.check();
    const r = this.regions.get(this.id(principal, name));
    if (!r) throw msg.shmRegionNotFound(name, '');
    if (offset + size > r.byte_size) throw msg.shmRangeInvalid(name);
    return r;
  }

  /**
   * A copy of `size` bytes at `offset` of region `name` (an input).
   * @throws TritonError NOT_FOUND (unknown region), INVALID_ARG (out of bounds, over maxReadBytes)
   */
  read(principal: Principal, name: string, offset: number, size: number): Uint8Array {
    const r = this.region(principal, name, offset, size);
    if (size > this.opts.maxReadBytes) throw msg.shmReadTooLarge(name, size, this.opts.maxReadBytes);
    const out = Buffer.allocUnsafe(size);
    let done = 0;
    while (done < size) {
      const n = readSync(r.fd, out, done, size - done, r.offset + offset + done);
      if (n === 0) throw msg.shmRegionTruncated(name);
      done += n;
    }
    return out;
  }

  /**
   * Write `data` at `offset` of region `name` (an output), which the client gave `byteSize` bytes.
   * @throws TritonError NOT_FOUND (unknown region), INVALID_ARG (too small, out of bounds)
   */
  write(principal: Principal, name: string, offset: number, byteSize: number, data: Uint8Array, output: string): void {
    if (data.length > byteSize) {
      throw msg.shmOutputTooSmall(output, byteSize, data.length);
    }
    const r = this.region(principal, name, offset, byteSize);
    let done = 0;
    while (done < data.length) done += writeSync(r.fd, data, done, data.length - done, r.offset + offset + done);
  }

  /**
   * `principal`'s regions for one inference request (a lease: call `release` when its last
   * response is done), or undefined while client shared memory is off.
   */
  access(principal: Principal): ShmAccess | undefined {
    if (!this.opts.enabled) return undefined;
    const held = new Map<string, Region>();
    let released = false;
    const hold = (name: string, offset: number, size: number) => {
      const r = this.region(principal, name, offset, size);
      const id = this.id(principal, name);
      if (!released && !held.has(id)) {
        held.set(id, r);
        r.users++;
      }
    };
    return {
      read: (t) => {
        hold(t.region, t.offset, t.byteSize);
        return this.read(principal, t.region, t.offset, t.byteSize);
      },
      hold: (t) => hold(t.region, t.offset, t.byteSize),
      write: (t, data, output) => this.write(principal, t.region, t.offset, t.byteSize, data, output),
      release: () => {
        if (released) return;
        released = true;
        for (const [id, r] of held) {
          r.users--;
          if (r.users === 0 && r.awaitingUnregister) this.remove(id, r);
        }
        held.clear();
      },
    };
  }

  /** Close every region (server stop). */
  close(): void {
    for (const r of this.regions.values()) closeSync(r.fd);
    this.regions.clear();
  }
}
