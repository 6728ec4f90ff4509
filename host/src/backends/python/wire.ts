/**
 * Tensors and errors on the stub wire: a tensor is `{name, datatype, shape, offset, size}`, its
 * bytes in a shared-memory region (spec §1.10 layout: row-major little-endian, BYTES as
 * `[u32 LE length][bytes]` elements); an error is `{code, message}` with Triton's code names.
 */
import { ERROR_CODES, TritonError, type ErrorCode } from '../../contract/errors.js';
import type { Tensor } from '../../contract/types.js';
import { isDataType } from '../../contract/datatypes.js';
import type { ArenaPair, Region } from './shm.js';

/** A tensor as the stub and Warden describe it to each other. */
export interface WireTensor {
  name: string;
  datatype: string;
  shape: number[];
  offset: number;
  size: number;
  /** Size of the in arena when the region was written (the stub remaps up to it). */
  arena_size?: number;
}

/** Most dims a tensor from the stub may have. */
const MAX_DIMS = 64;

/** Copy tensors into the in arena. @throws Error when the arena is full (regions written so far are released). */
export function writeTensors(arenas: ArenaPair, tensors: readonly Tensor[], regions: Region[]): WireTensor[] {
  const start = regions.length;
  try {
    return tensors.map((t) => {
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
 * Tensors the stub wrote into the out arena, copied out; `regions` receives what to free.
 * @throws Error for a malformed description (a buggy stub): bad name, datatype or shape.
 */
export function readTensors(arenas: ArenaPair, wire: unknown, regions: Region[]): Tensor[] {
  if (!Array.isArray(wire)) throw new Error('tensor list expected');
  return wire.map((w: WireTensor) => {
    regions.push({ offset: w.offset, size: w.size });
    if (typeof w?.name !== 'string' || !isDataType(w.datatype)) throw new Error(`malformed tensor from the Python stub: ${JSON.stringify(w?.name)}`);
    if (!Array.isArray(w.shape) || w.shape.length > MAX_DIMS || !w.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new Error(`malformed shape of tensor '${w.name}' from the Python stub`);
    }
    return { name: w.name, datatype: w.datatype, shape: w.shape, data: arenas.read(w) };
  });
}

/** A TritonError from the stub's `{code, message}` (unknown codes become INTERNAL). */
export function errorFromWire(e: unknown): TritonError {
  const w = (e ?? {}) as { code?: unknown; message?: unknown };
  const code = ERROR_CODES.includes(w.code as ErrorCode) ? (w.code as ErrorCode) : 'INTERNAL';
  return new TritonError(code, String(w.message ?? 'error'));
}
