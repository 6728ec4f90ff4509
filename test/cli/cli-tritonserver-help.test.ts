/**
 * The flag parser against the real tritonserver's own list: every flag the wheel's
 * `tritonserver --help` (2.51, test/backends/native/triton-wheel.ts) prints is accepted by `parseCli`
 * (honoured, or ignored with a warning: IGNORED_TRITON_FLAGS), with a value of the type the help
 * names. Skips, saying why, where the wheel cannot be had or run.
 */
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { IGNORED_TRITON_FLAGS, parseCli } from '../../host/src/cli-options.js';
import { ensureTritonWheel, type TritonWheel } from '../backends/native/triton-wheel.js';

let wheel: TritonWheel = { ok: false, reason: 'not prepared' };
let flags: { name: string; type: string | undefined }[] = [];

/**
 * A value tritonserver's own syntax accepts, for flags whose value has a shape of its own
 * (examples from tritonserver's `--help` text and Triton's docs); others get one of their type.
 */
const EXAMPLES: Record<string, string[]> = {
  'model-control-mode': ['explicit'],
  'load-model': ['m'],
  'log-format': ['ISO8601'],
  'http-restricted-api': ['model-repository:admin-key=secret'],
  'grpc-restricted-protocol': ['model-repository:admin-key=secret'],
  'trace-config': ['triton,file=/tmp/trace.json'],
  'trace-level': ['TIMESTAMPS'],
  'backend-config': ['python,shm-default-byte-size=1048576'],
  'cache-config': ['local,size=1048576'],
  'metrics-config': ['summary_latencies=true'],
  'host-policy': ['numa0,numa-node=0'],
  'rate-limit': ['execution_count'],
  'rate-limit-resource': ['R1:10:0'],
  'cuda-memory-pool-byte-size': ['0:1024'],
  'cuda-virtual-address-size': ['0:1024'],
  'model-load-gpu-limit': ['0:0.5'],
  'sagemaker-safe-port-range': ['8000-9000'],
  'grpc-infer-response-compression-level': ['none'],
};

const BY_TYPE: Record<string, string> = { boolean: 'true', integer: '1', float: '1.5', string: 'x' };

describe("tritonserver's own --help (the wheel's 2.51)", () => {
  beforeAll(async () => {
    wheel = await ensureTritonWheel();
    if (!wheel.ok) return;
    const help = spawnSync(wheel.tritonserver, ['--help'], { encoding: 'utf8', timeout: 30_000 });
    // Every option line of the usage text: two spaces, the flag, an optional <type> or <syntax>.
    flags = [...`${help.stdout}${help.stderr}`.matchAll(/^ {2}--([a-z0-9-]+)(?: <(.+)>)?\s*$/gm)].map((m) => ({ name: m[1]!, type: m[2] }));
  }, 15 * 60_000);

  it('lists the flags this test expects it to (the text was read)', (ctx) => {
    if (!wheel.ok) return ctx.skip(`tritonserver wheel unavailable: ${wheel.reason}`);
    expect(flags.length).toBeGreaterThan(80);
    expect(flags.map((f) => f.name)).toEqual(expect.arrayContaining(['model-repository', 'trace-log-frequency', 'exit-timeout-secs', 'http-restricted-api']));
  });

  it('every flag it lists is accepted by the parser: honoured, or ignored with a warning', (ctx) => {
    if (!wheel.ok) return ctx.skip(`tritonserver wheel unavailable: ${wheel.reason}`);
    const refused: string[] = [];
    for (const { name, type } of flags) {
      if (name === 'help') {
        expect(parseCli(['--help']).help).toBe(true);
        continue;
      }
      // --load-model needs explicit mode; --response-cache-byte-size and --cache-config exclude each other.
      const context = name === 'load-model' ? ['--model-control-mode=explicit'] : [];
      // A value of a syntax of its own needs an example here (else this test would guess one).
      if (type !== undefined && !(type in BY_TYPE)) expect(EXAMPLES, `an example value for --${name} <${type}>`).toHaveProperty([name]);
      const values = type === undefined ? [undefined] : (EXAMPLES[name] ?? [BY_TYPE[type]!]);
      for (const value of values) {
        const flag = value === undefined ? `--${name}` : `--${name}=${value}`;
        try {
          const o = parseCli(['--model-repository=/m', ...context, flag]);
          if (IGNORED_TRITON_FLAGS.includes(name)) expect(o.notes.ignoredFlags, flag).toContain(`--${name}`);
        } catch (e) {
          refused.push(`${flag}: ${(e as Error).message}`);
        }
      }
    }
    expect(refused).toEqual([]);
  });

  it('a flag tritonserver does not list is refused, as tritonserver refuses it', (ctx) => {
    if (!wheel.ok) return ctx.skip(`tritonserver wheel unavailable: ${wheel.reason}`);
    expect(flags.map((f) => f.name)).not.toContain('log-frequency');
    expect(() => parseCli(['--model-repository=/m', '--log-frequency=3'])).toThrow(/log-frequency/);
    expect(parseCli(['--model-repository=/m', '--trace-log-frequency=3']).trace).toEqual({ logFrequency: 3 });
  });
});
