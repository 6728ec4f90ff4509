/**
 * One request of a sequence (spec §4: `sequence_id`, `sequence_start`, `sequence_end`) to a model
 * with one INT32 [1] input `INPUT0` and output `OUTPUT0` (an accumulator), over HTTP or gRPC, as
 * a tenant: the tenancy tests send the same step both ways to compare what each tenant sees.
 */
import { fetchJson } from './repo.js';
import { int32s, unaryCall, type TritonGrpcClient } from './grpc.js';

/** The output's value, or the error text with its HTTP status / gRPC code. */
export type SequenceStep = { value: number } | { error: string; code: number | string };

/** Where a step goes: the server's HTTP base URL and a gRPC client of the same server. */
export interface SequenceTarget {
  httpUrl: string;
  client: TritonGrpcClient;
}

/** `model`, the sequence `id`, the `value` sent and the sequence flags of {@link sequenceStep}. */
export type SequenceStepArgs = [model: string, id: number | bigint | string, value: number, flags?: { start?: boolean; end?: boolean }];

/**
 * Send `value` on sequence `id` of `model` with `token` as bearer token. A bigint id goes as a
 * bare JSON integer over HTTP (exact beyond 2^53) and as `uint64_param` over gRPC; a number as
 * `int64_param`, a string as `string_param`.
 */
export async function sequenceStep(
  target: SequenceTarget,
  proto: 'http' | 'grpc',
  token: string,
  ...[model, id, value, flags = {}]: SequenceStepArgs
): Promise<SequenceStep> {
  if (proto === 'http') {
    const body = JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: [value] }],
      parameters: { sequence_id: typeof id === 'bigint' ? '@@ID@@' : id, sequence_start: flags.start === true, sequence_end: flags.end === true },
    }).replace('"@@ID@@"', String(id));
    const r = await fetchJson(`${target.httpUrl}/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body,
    });
    if (r.status !== 200) return { error: r.json?.error ?? r.text, code: r.status };
    return { value: r.json.outputs.find((o: { name: string }) => o.name === 'OUTPUT0').data[0] };
  }
  const r = await unaryCall(
    target.client,
    'ModelInfer',
    {
      model_name: model,
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(value).buffer)],
      parameters: {
        sequence_id: typeof id === 'string' ? { string_param: id } : typeof id === 'bigint' ? { uint64_param: id.toString() } : { int64_param: id },
        sequence_start: { bool_param: flags.start === true },
        sequence_end: { bool_param: flags.end === true },
      },
    },
    token,
  );
  if (r.err) return { error: r.err.details, code: r.err.code };
  const i = (r.res.outputs as { name: string }[]).findIndex((o) => o.name === 'OUTPUT0');
  return { value: int32s(r.res.raw_output_contents[i])[0]! };
}
