/**
 * Tensors and errors on the stub wire: a tensor is `{name, datatype, shape, offset, size}`, its
 * bytes (spec §1.10 layout: row-major little-endian, BYTES as `[u32 LE length][bytes]` elements)
 * in a shared-memory region, or, with `inline: true`, at `offset` in the frame's own tail
 * (`ipc.ts`): tensors up to {@link INLINE_MAX_BYTES} ride in the control message, which saves a
 * positioned write or read per tensor here and an arena allocation and free in the stub (Triton's
 * stub moves every tensor through shared memory; for small ones the copy is cheaper than the
 * bookkeeping). An error is `{code, message}` with Triton's code names.
 */
import { ERROR_CODES, TritonError, type ErrorCode } from '../../contract/errors.js';
import type { Tensor } from '../../contract/types.js';
import { isDataType } from '../../contract/datatypes.js';
import type { InlineTail } from './ipc.js';
import type { ArenaPair, Region } from './shm.js';

/** Largest tensor sent inline in a control frame (bytes); larger ones go through the arenas. */
export const INLINE_MAX_BYTES = 16 * 1024;
/** Bound on one frame's inline tail (bytes); tensors past it go through the arenas. */
export const INLINE_TAIL_MAX_BYTES = 1024 * 1024;

/** A tensor as the stub and Warden describe it to each other. */
export interface WireTensor {
  name: string;
  datatype: string;
  shape: number[];
  offset: number;
  size: number;
  /** Size of the in arena when the region was written (the stub remaps up to it). */
  arena_size?: number;
  /** The bytes are at `offset` in the frame's tail, not in an arena. */
  inline?: boolean;
}

/** Most dims a tensor from the stub may have. */
const MAX_DIMS = 64;

/**
 * Describe tensors for the stub: small ones into `tail` (when given, up to {@link INLINE_MAX_BYTES}
 * each and {@link INLINE_TAIL_MAX_BYTES} in all), the others copied into the in arena.
 * @throws Error when the arena is full (regions written so far are released).
 */
export function writeTensors(arenas: ArenaPair, tensors: readonly Tensor[], regions: Region[], tail?: InlineTail): WireTensor[] {
  const start = regions.length;
  try {
    return tensors.map((t) => {
      const size = t.data.byteLength;
      if (tail && size <= INLINE_MAX_BYTES && tail.length + size <= INLINE_TAIL_MAX_BYTES) {
        return { name: t.name, datatype: t.datatype, shape: t.shape, offset: tail.add(t.data), size, inline: true };
      }
      const r = arenas.write(t.data);
      regions.push(r);
      return { name: t.name, datatype: t.datatype, shape: t.shape, offset: r.offset, size: r.size, arena_size: arenas.inSize };
    });
  } catch (e) {
    for (const r of regions.splice(start)) arenas.release(r);
    throw e;
  }
}

/**
 * Tensors the stub sent, copied out of the out arena or of the frame's `tail` (`inline`);
 * `regions` receives the arena regions to free.
 * @throws Error for a malformed description (a buggy stub): bad name, datatype or shape, or an
 *   inline tensor outside the tail.
 */
export function readTensors(arenas: ArenaPair, wire: unknown, regions: Region[], tail?: Buffer): Tensor[] {
  if (!Array.isArray(wire)) throw new Error('tensor list expected');
  return wire.map((w: WireTensor) => {
    const inline = w?.inline === true;
    if (!inline) regions.push({ offset: w.offset, size: w.size });
    if (typeof w?.name !== 'string' || !isDataType(w.datatype)) throw new Error(`malformed tensor from the Python stub: ${JSON.stringify(w?.name)}`);
    if (!Array.isArray(w.shape) || w.shape.length > MAX_DIMS || !w.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new Error(`malformed shape of tensor '${w.name}' from the Python stub`);
    }
    return { name: w.name, datatype: w.datatype, shape: w.shape, data: inline ? readInline(tail, w) : arenas.read(w) };
  });
}

/** A copy of an inline tensor's bytes (so the frame's buffer is not kept alive). @throws Error outside the tail. */
function readInline(tail: Buffer | undefined, w: WireTensor): Buffer {
  const { offset, size } = w;
  if (!tail || !Number.isSafeInteger(offset) || !Number.isSafeInteger(size) || offset < 0 || size < 0 || offset + size > tail.length) {
    throw new Error(`inline tensor '${w.name}' [${offset}, +${size}) lies outside its message`);
  }
  const data = Buffer.allocUnsafe(size);
  tail.copy(data, 0, offset, offset + size);
  return data;
}

/** A TritonError from the stub's `{code, message}` (unknown codes become INTERNAL). */
export function errorFromWire(e: unknown): TritonError {
  const w = (e ?? {}) as { code?: unknown; message?: unknown };
  const code = ERROR_CODES.includes(w.code as ErrorCode) ? (w.code as ErrorCode) : 'INTERNAL';
  return new TritonError(code, String(w.message ?? 'error'));
}
