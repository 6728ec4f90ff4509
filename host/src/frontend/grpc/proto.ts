/**
 * Triton's gRPC service definition (`inference.GRPCInferenceService` of `grpc_service.proto` /
 * `model_config.proto`), loaded at start from the FileDescriptorSet exported from PyPI
 * `tritonclient[grpc]` (third_party/triton-grpc-protos, provenance.json there) — never written by hand.
 *
 * Messages are plain objects in protobufjs's `toObject` form with the options below: field names as
 * in the .proto (`raw_input_contents`), 64-bit integers as decimal strings (exact; hostile values
 * are checked before use), enums as names, `bytes` as Buffers, repeated fields and maps always
 * present, the name of the set member of each oneof in a virtual field (`parameter_choice`).
 */
import { readFileSync } from 'node:fs';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { fromJSON, type Options } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';

export const PROTO_OPTIONS: Options = { keepCase: true, longs: String, enums: String, defaults: false, arrays: true, objects: true, oneofs: true };

/** The fully-qualified service name. */
export const SERVICE_NAME = 'inference.GRPCInferenceService';

/**
 * Load the service from a FileDescriptorSet file.
 * @throws Error when the file cannot be read or holds no `inference.GRPCInferenceService`
 */
export function loadTritonService(protosetPath: string): ServiceDefinition {
  const set = descriptor.FileDescriptorSet.decode(readFileSync(protosetPath)) as unknown as descriptor.IFileDescriptorSet;
  const root = (protobuf.Root as unknown as { fromDescriptor(d: unknown): protobuf.Root }).fromDescriptor(set);
  restoreMapFields(root, set);
  const def = fromJSON(root.toJSON(), PROTO_OPTIONS);
  const service = def[SERVICE_NAME];
  if (service === undefined || 'format' in service) throw new Error(`the descriptor set has no service ${SERVICE_NAME}`);
  return service as unknown as ServiceDefinition;
}

/** A 64-bit integer field as decoded (a decimal string), or a number from an in-process caller. */
export type Int64 = string | number;

/** `InferParameter` (grpc_service.proto): one of bool / int64 / string / double / uint64. */
export interface InferParameter {
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  bool_param?: boolean;
  int64_param?: Int64;
  string_param?: string;
  double_param?: number;
  uint64_param?: Int64;
}

/** `InferTensorContents`: typed element lists (the alternative to `raw_input_contents`). */
export interface InferTensorContents {
  bool_contents: boolean[];
  int_contents: number[];
  int64_contents: Int64[];
  uint_contents: number[];
  uint64_contents: Int64[];
  fp32_contents: number[];
  fp64_contents: number[];
  bytes_contents: Buffer[];
}

export interface InferInputTensor {
  name?: string;
  datatype?: string;
  shape: Int64[];
  parameters: Record<string, InferParameter>;
  contents?: InferTensorContents;
}

export interface InferRequestedOutputTensor {
  name?: string;
  parameters: Record<string, InferParameter>;
}

export interface ModelInferRequest {
  model_name?: string;
  model_version?: string;
  id?: string;
  parameters: Record<string, InferParameter>;
  inputs: InferInputTensor[];
  outputs: InferRequestedOutputTensor[];
  raw_input_contents: Buffer[];
}

export interface InferOutputTensor {
  name: string;
  datatype: string;
  shape: Int64[];
  parameters?: Record<string, InferParameter>;
}

export interface ModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: Record<string, InferParameter>;
  outputs: InferOutputTensor[];
  raw_output_contents: Uint8Array[];
}

type DescriptorMessage = { name?: string; nestedType?: DescriptorMessage[]; options?: { mapEntry?: boolean } };

/**
 * protobufjs's `Root.fromDescriptor` turns `map<K, V>` fields into repeated `<Name>Entry` messages
 * (a descriptor stores maps that way); put them back as map fields, so `parameters`, `settings`,
 * `regions` and the config's maps decode to objects and encode from them as protoc's code does.
 */
function restoreMapFields(root: protobuf.Root, set: descriptor.IFileDescriptorSet): void {
  const entries = new Set<string>();
  const walk = (prefix: string, m: DescriptorMessage) => {
    const full = `${prefix}.${m.name ?? ''}`;
    if (m.options?.mapEntry) entries.add(full);
    for (const n of m.nestedType ?? []) walk(full, n);
  };
  for (const f of set.file ?? []) for (const m of (f.messageType ?? []) as DescriptorMessage[]) walk(f.package ? `.${f.package}` : '', m);
  const visit = (ns: protobuf.NamespaceBase) => {
    for (const obj of ns.nestedArray) {
      if (obj instanceof protobuf.Type) {
        for (const field of [...obj.fieldsArray]) {
          if (!field.repeated || !entries.has(field.type)) continue;
          const entry = obj.lookupType(field.type);
          const key = entry.fields.key!;
          const value = entry.fields.value!;
          obj.remove(field);
          obj.add(new protobuf.MapField(field.name, field.id, key.type, value.type));
        }
      }
      if (obj instanceof protobuf.Namespace) visit(obj);
    }
  };
  visit(root);
}
