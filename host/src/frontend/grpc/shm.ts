/** The system shared memory RPCs and the shared-memory side of ModelInfer, over dataplane/shared-memory.ts. */
import type { SystemSharedMemory } from '../../dataplane/shared-memory.js';
import { clientShmDisabled, cudaShmUnsupported } from '../../dataplane/shared-memory.errors.js';
import type { InferenceResponse, Principal } from '../../contract/types.js';
import type { ShmAccess, ShmTarget } from '../../dataplane/shared-memory.js';

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

  /**
   * `CudaSharedMemoryRegister` on a server without GPUs: Triton's INVALID_ARG (server
   * `grpc_server.cc` without TRITON_ENABLE_GPU: no client-shm check first).
   * @throws TritonError INVALID_ARG always
   */
  cudaRegister(name: string): never {
    throw cudaShmUnsupported(name);
  }

  /**
   * One request's lease on the principal's regions (release it when the request's last response is
   * done), or undefined when client shared memory is off.
   */
  access(p: Principal): ShmAccess | undefined {
    return this.shm.access(p);
  }

  /** `CudaSharedMemoryStatus`: no GPU regions (Triton built without GPUs). @throws TritonError NOT_FOUND for a name */
  cudaStatus(p: Principal, name: string): { regions: Record<string, unknown> } {
    this.shm.cudaStatus(p, name);
    return { regions: {} };
  }

  /** `CudaSharedMemoryUnregister`: nothing is registered; UNSUPPORTED while client shm is off. */
  cudaUnregister(): object {
    if (!this.shm.enabled) throw clientShmDisabled();
    return {};
  }

  /** Copy the outputs the client placed in shared memory (the caller releases the response). @throws TritonError */
  writeOutputs(access: ShmAccess | undefined, response: InferenceResponse, targets: ReadonlyMap<string, ShmTarget>): void {
    if (targets.size === 0) return;
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
