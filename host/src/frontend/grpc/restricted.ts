/**
 * `--grpc-restricted-protocol` on the gRPC frontend (frontend/restricted.ts; Triton server
 * src/grpc/grpc_server.cc CommonCallData::ExecutePrecondition, infer_handler.cc,
 * stream_infer_handler.cc): each RPC belongs to one protocol group, as Triton registers them; a
 * call to a restricted group whose metadata lacks `triton-grpc-protocol-<key>: <value>` gets
 * UNAVAILABLE "This protocol is restricted, expecting header 'triton-grpc-protocol-<key>'" and
 * nothing runs. Checked after authentication (multi-tenant mode), so both must pass.
 */
import type { Metadata } from '@grpc/grpc-js';
import { type TritonError } from '../../contract/errors.js';
import { type RestrictedCategory, type RestrictedFeatures, type Restriction, restrictionSatisfied } from '../restricted.js';
import { protocolRestricted } from './grpc.errors.js';

/** The group of every RPC Warden serves (grpc_server.cc: the group each Register* function passes). */
const RPC_CATEGORIES: Readonly<Record<string, RestrictedCategory>> = {
  ServerLive: 'health',
  ServerReady: 'health',
  ModelReady: 'health',
  // grpc.health.v1.Health
  Check: 'health',
  Watch: 'health',
  ServerMetadata: 'metadata',
  ModelMetadata: 'metadata',
  ModelConfig: 'model-config',
  ModelStatistics: 'statistics',
  TraceSetting: 'trace',
  LogSettings: 'logging',
  SystemSharedMemoryStatus: 'shared-memory',
  SystemSharedMemoryRegister: 'shared-memory',
  SystemSharedMemoryUnregister: 'shared-memory',
  CudaSharedMemoryStatus: 'shared-memory',
  CudaSharedMemoryRegister: 'shared-memory',
  CudaSharedMemoryUnregister: 'shared-memory',
  RepositoryIndex: 'model-repository',
  RepositoryModelLoad: 'model-repository',
  RepositoryModelUnload: 'model-repository',
  ModelInfer: 'inference',
  ModelStreamInfer: 'inference',
};

/**
 * The protocol group of an RPC (its method name, or its path `/<service>/<method>`).
 * @throws Error for an RPC no group covers (a new RPC must be classified)
 */
export function grpcCategoryOf(rpc: string): RestrictedCategory {
  const c = RPC_CATEGORIES[rpc.slice(rpc.lastIndexOf('/') + 1)];
  if (!c) throw new Error(`RPC ${rpc} belongs to no restricted protocol group (frontend/grpc/restricted.ts)`);
  return c;
}

/** The `--grpc-restricted-protocol` settings of one server. */
export class GrpcRestrictions {
  constructor(private readonly features: RestrictedFeatures = {}) {}

  /** The restriction of `rpc` (method name or path). @returns undefined when its group is open */
  of(rpc: string): Restriction | undefined {
    return this.features[grpcCategoryOf(rpc)];
  }

  /**
   * The error a call to `rpc` with `metadata` gets, or undefined when it may run. The first value
   * under the key counts, as Triton's `client_metadata().find`.
   */
  refusal(rpc: string, metadata: Metadata): TritonError | undefined {
    const r = this.of(rpc);
    if (!r || restrictionSatisfied(r, metadata.get(r.header)[0])) return undefined;
    return protocolRestricted(r.header);
  }
}
