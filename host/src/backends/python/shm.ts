/**
 * Shared-memory tensors between Warden and a Python stub (spec §7: Triton's Python backend moves
 * tensors through POSIX shared memory). Each instance has two files in /dev/shm (tmpfs):
 *
 * - the **in** arena, written by Warden with positioned `write(2)`s (one kernel copy, no
 *   serialisation) and mapped by the stub, which views request inputs in place (numpy);
 * - the **out** arena, allocated and written by the stub through its mapping and read here with
 *   positioned `read(2)`s, after which Warden tells the stub to free the regions.
 *
 * Node has no mmap: reading/writing the tmpfs file at offsets was measured against memcpy (what a
 * native mmap would cost at best)
 * in `bench/python.ts` (64 MiB: arena write + read against 2 × memcpy; a smoke run under load gave
 * 1.26× memcpy time). A native mmap would save at most the read copy of outputs: request tensors live
 * in Node buffers, so writing them into a mapping is the same one copy `write(2)` makes.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readdirSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Region alignment in bytes (a cache line; numpy views of any dtype are aligned). */
export const ALIGN = 64;

/** Directory of the arena files: /dev/shm where it exists (Linux), else the temp directory. */
export const SHM_DIR = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

const round = (n: number) => Math.max(ALIGN, Math.ceil(n / ALIGN) * ALIGN);

/**
 * First-fit allocator of byte ranges in a growable space (64-byte aligned, coalescing frees).
 * `alloc` returns undefined when the space must grow first ({@link grow}).
 */
export class RegionAllocator {
  private free: [number, number][];
  constructor(public size: number) {
    this.free = [[0, size]];
  }

  alloc(bytes: number): number | undefined {
    const n = round(bytes);
    for (let i = 0; i < this.free.length; i++) {
      const [off, size] = this.free[i]!;
      if (size >= n) {
        if (size === n) this.free.splice(i, 1);
        else this.free[i] = [off + n, size - n];
        return off;
      }
    }
    return undefined;
  }

  /** Extend the space to `size` bytes (never shrinks). */
  grow(size: number): void {
    if (size <= this.size) return;
    const last = this.free[this.free.length - 1];
    if (last && last[0] + last[1] === this.size) last[1] += size - this.size;
    else this.free.push([this.size, size - this.size]);
    this.size = size;
  }

  release(off: number, bytes: number): void {
    const n = round(bytes);
    const fl = this.free;
    let i = 0;
    while (i < fl.length && fl[i]![0] < off) i++;
    fl.splice(i, 0, [off, n]);
    // merge with neighbours
    if (i + 1 < fl.length && fl[i]![0] + fl[i]![1] === fl[i + 1]![0]) {
      fl[i]![1] += fl[i + 1]![1];
      fl.splice(i + 1, 1);
    }
    if (i > 0 && fl[i - 1]![0] + fl[i - 1]![1] === fl[i]![0]) {
      fl[i - 1]![1] += fl[i]![1];
      fl.splice(i, 1);
    }
  }

  /** Free bytes at the end of the space (what {@link grow} extends). */
  get tailFree(): number {
    const last = this.free[this.free.length - 1];
    return last && last[0] + last[1] === this.size ? last[1] : 0;
  }

  /** Bytes currently allocated (for tests and leak checks). */
  get used(): number {
    return this.size - this.free.reduce((s, [, n]) => s + n, 0);
  }
}

/** One region of an arena: `[offset, size)` in bytes. */
export interface Region {
  offset: number;
  size: number;
}

/**
 * The pair of arena files of one stub process. Created empty (the stub sizes the out arena);
 * {@link close} unlinks both. `limitBytes` bounds the in arena (default 4 GiB).
 */
export class ArenaPair {
  readonly inPath: string;
  readonly outPath: string;
  private readonly inFd: number;
  private readonly outFd: number;
  /** Size of the out arena when last checked (it only grows; a region past it re-checks). */
  private outSizeSeen = 0;
  private readonly alloc: RegionAllocator;
  private closed = false;

  constructor(
    label: string,
    readonly limitBytes = 4 * 1024 * 1024 * 1024,
  ) {
    const tag = `warden-py-${process.pid}-${label.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)}-${randomBytes(4).toString('hex')}`;
    this.inPath = join(SHM_DIR, `${tag}-in`);
    this.outPath = join(SHM_DIR, `${tag}-out`);
    this.inFd = openSync(this.inPath, 'wx+', 0o600);
    this.outFd = openSync(this.outPath, 'wx+', 0o600);
    const initial = 1 << 20;
    ftruncateSync(this.inFd, initial);
    this.alloc = new RegionAllocator(initial);
  }

  /** Size of the in arena now (the stub remaps up to it). */
  get inSize(): number {
    return this.alloc.size;
  }

  /** Bytes allocated in the in arena. */
  get inUsed(): number {
    return this.alloc.used;
  }

  /**
   * Copy `data` into a new in-arena region.
   * @throws Error if the arena would exceed its limit (the caller fails the request).
   */
  write(data: Uint8Array): Region {
    let off = this.alloc.alloc(data.byteLength);
    if (off === undefined) {
      let size = this.alloc.size;
      while (size - this.alloc.size + this.alloc.tailFree < round(data.byteLength)) size *= 2;
      if (size > this.limitBytes) throw new Error(`Python backend shared memory would exceed ${this.limitBytes} bytes`);
      ftruncateSync(this.inFd, size);
      this.alloc.grow(size);
      off = this.alloc.alloc(data.byteLength)!;
    }
    let done = 0;
    while (done < data.byteLength) done += writeSync(this.inFd, data, done, data.byteLength - done, off + done);
    return { offset: off, size: data.byteLength };
  }

  /** Free an in-arena region (the stub is done with it). */
  release(r: Region): void {
    if (!this.closed) this.alloc.release(r.offset, r.size);
  }

  /**
   * Copy an out-arena region the stub wrote into fresh memory.
   * @throws Error if the region lies outside the file (a buggy stub).
   */
  read(r: Region): Buffer {
    if (!Number.isSafeInteger(r.offset) || !Number.isSafeInteger(r.size) || r.offset < 0 || r.size < 0 || r.size > this.limitBytes) {
      throw new Error(`invalid shared memory region [${r.offset}, +${r.size})`);
    }
    // Bounded by what the stub really wrote before anything is allocated here.
    if (r.offset + r.size > this.outSizeSeen && r.offset + r.size > (this.outSizeSeen = fstatSync(this.outFd).size)) {
      throw new Error(`shared memory region [${r.offset}, +${r.size}) lies past the end of the arena`);
    }
    const buf = Buffer.allocUnsafe(r.size);
    let done = 0;
    while (done < r.size) {
      const n = readSync(this.outFd, buf, done, r.size - done, r.offset + done);
      if (n === 0) throw new Error(`shared memory region [${r.offset}, +${r.size}) lies past the end of the arena`);
      done += n;
    }
    return buf;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const fd of [this.inFd, this.outFd]) closeSync(fd);
    for (const p of [this.inPath, this.outPath]) {
      try {
        unlinkSync(p);
      } catch {
        /* already gone */
      }
    }
  }
}

/**
 * Remove arena files left by Warden processes that no longer exist (killed before they could
 * unlink them). Only names `warden-py-<pid>-…` whose pid is not alive are touched.
 * @returns how many files were removed
 */
export function removeStaleArenas(dir = SHM_DIR): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const m = /^warden-py-(\d+)-/.exec(name);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
      continue; // alive
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') continue;
    }
    try {
      unlinkSync(join(dir, name));
      removed++;
    } catch {
      /* raced with another cleaner */
    }
  }
  return removed;
}
