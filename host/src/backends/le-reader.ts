/**
 * Sequential little-endian reads of the fixed-size fields of a binary record, as the native side
 * lays them out for the host (the isolation ring's records, the wasmtime results descriptor).
 */

/** Reads each field at the offset {@link take} hands out; a subclass bounds the reads its own way. */
export abstract class LittleEndianReader {
  constructor(protected readonly view: DataView) {}

  /**
   * The offset of the next `n` bytes, which the read there consumes.
   * @throws whatever the subclass throws for a read past its end
   */
  protected abstract take(n: number): number;

  u8(): number {
    return this.view.getUint8(this.take(1));
  }
  u32(): number {
    return this.view.getUint32(this.take(4), true);
  }
  u64(): bigint {
    return this.view.getBigUint64(this.take(8), true);
  }
  i64(): bigint {
    return this.view.getBigInt64(this.take(8), true);
  }
  f64(): number {
    return this.view.getFloat64(this.take(8), true);
  }
}
