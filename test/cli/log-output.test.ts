/**
 * What the `warden` process writes (log-output.ts, lifecycle/model-table.ts): readable lines with
 * `--log-style=pretty` (what a terminal gets by default), JSON lines otherwise (a pipe, as here);
 * in both, after start-up, tritonserver's table of models with version and state, and a failed
 * load's reason at the default level.
 */
import { describe, expect, it } from 'vitest';
import { freePort, tempRepo } from '../helpers/repo.js';
import { spawnCli } from '../helpers/cli.js';
import { MODEL_TABLE_KEY } from '../../host/src/lifecycle/model-table.js';

const BROKEN =
  'backend: "no_such_backend"\nmax_batch_size: 0\ninput [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "O" data_type: TYPE_INT32 dims: [ 1 ] } ]\n';

/** Start warden on a repository of `simple` and a model that fails to load, with `flags`; its output once started. */
async function startedOutput(flags: string[]): Promise<string> {
  const repo = tempRepo(['simple']);
  repo.addModel('broken', BROKEN);
  const cli = spawnCli([
    `--model-repository=${repo.path}`,
    `--http-port=${await freePort()}`,
    '--allow-metrics=false',
    '--allow-grpc=false',
    '--exit-on-error=false',
    '--exit-timeout-secs=5',
    ...flags,
  ]);
  try {
    await cli.started();
    cli.child.kill('SIGTERM');
    expect((await cli.exited).code).toBe(0);
    return cli.stdout;
  } finally {
    cli.child.kill('SIGKILL');
    repo.cleanup();
  }
}

describe('the log of the warden process', () => {
  it('--log-style=pretty: readable lines, the table of models and states, the failed load with its reason', async () => {
    const out = await startedOutput(['--log-style=pretty']);
    expect(out).not.toMatch(/^\{"level"/m);
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] ERROR: failed to load 'broken'.*no_such_backend/m);
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: models\n\+-+\+-+\+-+\+\n\| Model +\| Version \| Status +\|\n/m);
    expect(out).toMatch(/^\| simple +\| 1 +\| READY +\|$/m);
    expect(out).toMatch(/^\| broken +\| 1 +\| UNAVAILABLE: .*no_such_backend.*\|$/m);
    expect(out).toMatch(/INFO: Warden started/);
  }, 60_000);

  it('not a terminal: JSON lines, the table as one record with its rows, the failed load at the error level', async () => {
    const records = (await startedOutput([]))
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);
    const tables = records.filter((r) => r[MODEL_TABLE_KEY] !== undefined);
    expect(tables).toHaveLength(1);
    expect(tables[0]!.level).toBe(30);
    expect(tables[0]!.msg).toMatch(/^models\n\+-/);
    expect(tables[0]![MODEL_TABLE_KEY]).toEqual([
      { model: 'broken', version: '1', state: 'UNAVAILABLE', reason: expect.stringMatching(/no_such_backend/) },
      { model: 'simple', version: '1', state: 'READY' },
    ]);
    const failed = records.find((r) => r.level === 50 && r.model === 'broken');
    expect(failed?.msg).toMatch(/^failed to load 'broken'.*no_such_backend/);
  }, 60_000);
});
