/**
 * Start-up and poll order (Triton's model lifecycle loads a model's dependencies first and an
 * ensemble after every model its steps name): in `none` and `poll` mode an ensemble listed before
 * its composing models — here alphabetically first, with one load at a time — must wait for them,
 * never fail with "not available", and never make `--exit-on-error` stop the server.
 */
import { describe, expect, it } from 'vitest';
import { perTestServers } from '../helpers/servers.js';
import { postJson } from '../helpers/repo.js';

const { repository, serve } = perTestServers();

/** `a_ens` (one step over `z_simple`, then a second ensemble `b_ens` over `a_ens`): both sort before their dependency. */
function ensembleRepo() {
  const repo = repository([]);
  repo.addExample('simple', 'z_simple');
  repo.write('z_simple/config.pbtxt', repoConfig('z_simple'));
  /** Ensemble `name` (IN0, IN1 -> SUM) of one step on `step` with its inputs `in0`, `in1` and output `out`. */
  const ensemble = (name: string, step: string, [in0, in1, out]: [string, string, string]) => `
name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "IN1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "${step}" model_version: -1
  input_map { key: "${in0}" value: "IN0" } input_map { key: "${in1}" value: "IN1" }
  output_map { key: "${out}" value: "SUM" } } ] }
`;
  repo.addModel('a_ens', ensemble('a_ens', 'z_simple', ['INPUT0', 'INPUT1', 'OUTPUT0']));
  repo.addModel('b_ens', ensemble('b_ens', 'a_ens', ['IN0', 'IN1', 'SUM']));
  return repo;
}

function repoConfig(name: string): string {
  return `name: "${name}"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
`;
}

const ints = (k: number) => Array.from({ length: 16 }, (_, i) => i * k);

describe('dependency-ordered loading', () => {
  for (const mode of ['none', 'poll'] as const) {
    it(`${mode} mode, one load at a time: the ensembles load after the model they name; exit-on-error does not fire`, async () => {
      const repo = ensembleRepo();
      const server = await serve(repo, {
        modelControlMode: mode,
        modelLoadThreadCount: 1,
        exitOnError: true,
        ...(mode === 'poll' ? { repositoryPollSecs: 3600 } : {}),
      });
      for (const m of ['z_simple', 'a_ens', 'b_ens']) {
        expect((await fetch(`${server.httpUrl}/v2/models/${m}/ready`)).status, m).toBe(200);
      }
      const r = await postJson(`${server.httpUrl}/v2/models/b_ens/infer`, {
        inputs: [
          { name: 'IN0', datatype: 'INT32', shape: [1, 16], data: ints(1) },
          { name: 'IN1', datatype: 'INT32', shape: [1, 16], data: ints(2) },
        ],
      });
      expect(r.status).toBe(200);
      expect((r.json as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual(ints(3));
    });
  }
});
