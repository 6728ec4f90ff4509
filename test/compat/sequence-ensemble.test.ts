/**
 * tritonclient[http] and tritonclient[grpc] against a sequence model inside an ensemble
 * (`sequence_ensemble.py`): a non-batching ensemble over the default repository's
 * `simple_dyna_sequence`, loaded in explicit mode (which loads its step). The step must get the
 * ensemble request's correlation ID and flags and the batch-1 dimension (Triton core
 * `ensemble_scheduler.cc`), so the results are those of Triton's sequence client example.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { tempRepo } from '../helpers/repo.js';
import { useCompatServer } from './harness.js';

describe('a sequence model inside an ensemble, through tritonclient', () => {
  const repo = tempRepo();
  repo.addModel(
    'sequence_ensemble',
    `name: "sequence_ensemble"
platform: "ensemble"
max_batch_size: 0
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [ {
  model_name: "simple_dyna_sequence"
  model_version: -1
  input_map { key: "INPUT" value: "INPUT" }
  output_map { key: "OUTPUT" value: "OUTPUT" }
} ] }
`,
  );
  afterAll(() => repo.cleanup());
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: ['sequence_ensemble'], extraRepositories: [repo.path], grpc: true });

  it('interleaved sequences over HTTP and gRPC keep their state and reach the CORRID control', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'sequence_ensemble.py',
      ['--grpc-url', c.grpcUrl, '--models', 'sequence_ensemble'],
      ['http: two interleaved sequences through the ensemble', 'grpc: two interleaved sequences through the ensemble'],
    );
    expect(r.observed['http']).toEqual([
      [1, 11, 7, 5, 3, 2, 0, 1 + 1000],
      [101, -11, -7, -5, -3, -2, 0, -1 + 1001],
    ]);
    expect(r.observed['grpc']).toEqual([
      [1, 11, 7, 5, 3, 2, 0, 1 + 2000],
      [101, -11, -7, -5, -3, -2, 0, -1 + 2001],
    ]);
  });
});
