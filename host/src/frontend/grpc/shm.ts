/** The system shared memory RPCs and the shared-memory side of ModelInfer, over core/shared-memory.ts. */
import type { SystemSharedMemory } from '../../core/shared-memory.js';
import { clientShmDisabled } from '../../core/shared-memory.js';
import type { InferenceResponse, Principal } from '../../core/types.js';
import type { ShmAccess, ShmTarget } from '../../core/shared-memory.js';

export class ClientShm {
  constructor(private readonly shm: SystemSharedMemory) {}

  disabledError(): Error {
    return clientShmDisabled();
  }

  /** `SystemSharedMemoryStatus`: `{regions: {<name>: {name, key, offset, byte_size}}}`. */
  status(p: Principal, name: string): { regions: Record<string, unknown> } {
    return { regions: Object.fromEntries(this.shm.status(p, name).map((r) => [r.name, { ...r, offset: String(r.offset), byte_size: String(r.byte_size) }])) };
  }

  register(p: Principal, name: string, key: string, offset: string | number, byteSize: string | number): object {
    this.shm.register(p, name, key, toCount(offset), toCount(byteSize));
    return {};
  }

  unregister(p: Principal, name: string): object {
    this.shm.unregister(p, name);
    return {};
  }

  /** Input reads for one principal, or undefined when client shared memory is off. */
  access(p: Principal): ShmAccess | undefined {
    return this.shm.access(p);
  }

  /** Copy the outputs the client placed in shared memory (the caller releases the response). @throws TritonError */
  writeOutputs(p: Principal, response: InferenceResponse, targets: ReadonlyMap<string, ShmTarget>): void {
    if (targets.size === 0) return;
    const access = this.shm.access(p);
    for (const t of response.outputs) {
      const target = targets.get(t.name);
      if (target && access) access.write(target, t.data, t.name);
    }
  }
}

/** A uint64 field (decimal string) as a number, NaN-free: unsafe values stay bigint for the range check. */
function toCount(v: string | number): number | bigint {
  return typeof v === 'number' ? v : /^[0-9]{1,20}$/.test(v) ? (Number.isSafeInteger(Number(v)) ? Number(v) : BigInt(v)) : -1;
}
