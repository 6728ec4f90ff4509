/** A raw gRPC client of Triton's service (grpc-js, the committed descriptor set) for tests. */
import { credentials, makeGenericClientConstructor, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { join } from 'node:path';
import { loadTritonService } from '../../host/src/frontend/grpc/proto.js';
import { PROJECT_ROOT } from './repo.js';

export const PROTOSET = join(PROJECT_ROOT, 'third_party', 'triton-grpc-protos', 'grpc_service.protoset');

export type TritonGrpcClient = Client & Record<string, (...a: unknown[]) => unknown>;

export function tritonGrpcClient(address: string): TritonGrpcClient {
  const Ctor = makeGenericClientConstructor(loadTritonService(PROTOSET) as never, 'GRPCInferenceService');
  return new Ctor(address, credentials.createInsecure()) as unknown as TritonGrpcClient;
}

/** One unary call: resolves with the response or the status error (never rejects). */
export function unaryCall(
  client: TritonGrpcClient,
  method: string,
  request: unknown,
  token?: string,
  metadata: Record<string, string> = {},
): Promise<{ res?: any; err?: ServiceError }> {
  const md = new Metadata();
  if (token !== undefined) md.set('authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    client[method]!(request, md, (err: ServiceError | null, res: unknown) => resolve(err ? { err } : { res }));
  });
}

/** `simple`'s inputs as raw contents (INT32 [1,16]). */
export function simpleInfer(a: number[], b: number[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const raw = (v: number[]) => Buffer.from(new Int32Array(v).buffer);
  return {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [raw(a), raw(b)],
    ...extra,
  };
}

/** An INT32 raw output as numbers. */
export function int32s(b: Uint8Array): number[] {
  return Array.from(new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
}
