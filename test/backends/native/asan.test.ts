// The native host under AddressSanitizer + LeakSanitizer, on every test run: builds
// libtritonserver.so, the sample and failure-test backends and the standalone driver with
// -fsanitize=address (native/build/asan), then drives 10,000 identity requests (batched, two
// instances, nine datatypes), 1,000 add_sub, 500 decoupled repeat, 500 BLS requests through
// TRITONSERVER_ServerInferAsync (the driver as the embedding host), the ownership rules on the
// in-process API's error paths and every broken-backend case through the real library. Any use-after-free, double free, overflow or leak fails the test.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './helpers.js';

const BUILD = join(PROJECT_ROOT, 'native', 'build', 'asan');

function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync(cmd, args, { cwd: PROJECT_ROOT, encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status, out: `${r.stdout}\n${r.stderr}`, stdout: r.stdout, stderr: r.stderr };
}

describe('native host under AddressSanitizer / LeakSanitizer', () => {
  it('runs 10,000 requests through libtritonserver.so with no memory errors or leaks', { timeout: 600_000 }, () => {
    const configure = sh('cmake', ['-S', 'native', '-B', BUILD, '-DWARDEN_ASAN=ON', '-DCMAKE_BUILD_TYPE=Debug']);
    expect(configure.status, configure.out).toBe(0);
    const build = sh('cmake', ['--build', BUILD, '--parallel', '2']);
    expect(build.status, build.out).toBe(0);

    const run = sh(join(BUILD, 'warden_native_driver'), [join(BUILD, 'backends'), join(BUILD, 'test-backends'), '10000'], {
      ...process.env,
      ASAN_OPTIONS: 'detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1',
      LSAN_OPTIONS: 'report_objects=1',
    });
    expect(run.stderr).not.toMatch(/ERROR: (AddressSanitizer|LeakSanitizer)/);
    expect(run.status, run.out).toBe(0);
    expect(run.stdout).toMatch(/identity: 10000 requests in \d+ batches on 2 instances OK/);
    expect(run.stdout).toMatch(/add_sub: 1000 requests OK/);
    expect(run.stdout).toMatch(/repeat: 500 decoupled requests, \d+ streamed responses OK/);
    expect(run.stdout).toMatch(/bls: 500 in-process requests through TRITONSERVER_ServerInferAsync OK/);
    // Ownership on the error paths (Triton's tritonserver.cc / backend_model.cc): refused infers
    // leave the request with the caller, allocator failures give every buffer back, response
    // errors are copies the caller deletes, model config messages are the caller's.
    expect(run.stdout).toMatch(/ownership: error paths of the in-process API and model queries OK/);
    expect(run.stdout).toMatch(/failures: broken backends rejected, misbehaving backend contained/);
    expect(run.stdout).toMatch(/^OK: all checks passed/m);
  });
});
