// How Warden's native host treats backends that fail the way real C++ backends do (spec §6.2,
// §6.7): an exception escaping an entry point reports its what() in the error and the log;
// ModelInstanceFinalize runs after a failed ModelInstanceInitialize (as Triton does); instances
// registering the same custom metric (same family, same labels) make one Prometheus series.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeAddon } from '../../../host/src/platform/addon.js';
import { TEST_BACKEND_DIR, captureNativeLog, collector, loadNative, pbtxtConfig, request, requireNativeBuild, resolver, tensor } from './helpers.js';

const logLines: { level: number; msg: string }[] = [];

beforeAll(() => {
  requireNativeBuild();
  captureNativeLog(logLines, 'info');
});

const r = resolver({ backendDirectory: TEST_BACKEND_DIR });
afterAll(() => r.finalizeAll());

function faultsConfig(name: string, mode: string, count = 1) {
  return pbtxtConfig(
    name,
    `backend: "warden_test_cpp_faults" max_batch_size: 0
     input { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
     output { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
     instance_group { kind: KIND_CPU count: ${count} }
     parameters { key: "mode" value { string_value: "${mode}" } }`,
  );
}

const i32 = (v: number[]) => tensor('INPUT0', 'INT32', [v.length], new Int32Array(v));

describe('exceptions escaping backend entry points', () => {
  it("Execute: every request gets INTERNAL with the exception's what(), and the log has it", async () => {
    const m = await loadNative(r, faultsConfig('throws_execute', 'throw_execute'), '/nonexistent/throws_execute');
    try {
      const c = collector();
      await m.instances[0]!.execute([request('throws_execute', [i32([1, 2])], [])], [c.sender]).catch(() => undefined);
      await c.done;
      const last = c.responses.at(-1)!;
      expect(last.final).toBe(true);
      expect(last.error?.code).toBe('INTERNAL');
      expect(last.error?.message).toBe(
        "backend 'warden_test_cpp_faults' threw a C++ exception from TRITONBACKEND_ModelInstanceExecute: cpp_faults: tensor 'INPUT0' has no data",
      );
      await expect.poll(() => logLines.some((l) => l.level === 50 && l.msg.includes("cpp_faults: tensor 'INPUT0' has no data"))).toBe(true);
    } finally {
      await m.unload();
    }
  });

  it('ModelInstanceInitialize: the load fails with what(), and ModelInstanceFinalize is still called', async () => {
    const err = await loadNative(r, faultsConfig('throws_init', 'throw_init'), '/nonexistent/throws_init').catch((e) => e);
    expect(err.code).toBe('INTERNAL');
    expect(err.message).toBe(
      "backend 'warden_test_cpp_faults' threw a C++ exception from TRITONBACKEND_ModelInstanceInitialize: cpp_faults: shared memory region 'x' is gone",
    );
    await expect.poll(() => JSON.stringify(logLines)).toContain('cpp_faults: finalize throws_init_0');
  });

  it('a failed (returned-error) ModelInstanceInitialize is followed by ModelInstanceFinalize too', async () => {
    const err = await loadNative(r, faultsConfig('fails_init', 'fail_init'), '/nonexistent/fails_init').catch((e) => e);
    expect(err.message).toBe('cpp_faults: initialize failed on purpose');
    await expect.poll(() => JSON.stringify(logLines)).toContain('cpp_faults: finalize fails_init_0');
  });
});

describe('custom metrics registered by several instances', () => {
  it('one series per (family, label set), summed over instances; gone when the last instance is', async () => {
    const m = await loadNative(r, faultsConfig('metric_merge', 'echo', 3), '/nonexistent/metric_merge');
    try {
      for (const inst of m.instances) {
        const c = collector();
        await inst.execute([request('metric_merge', [i32([7])], [])], [c.sender]);
        await c.done;
        expect(c.responses.at(-1)!.error).toBeUndefined();
      }
      const text = nativeAddon().customMetricsText();
      const series = text.split('\n').filter((l) => l.startsWith('warden_test_executions{model="metric_merge"}'));
      expect(series).toEqual(['warden_test_executions{model="metric_merge"} 3']);
    } finally {
      await m.unload();
    }
    expect(nativeAddon().customMetricsText()).not.toContain('model="metric_merge"');
  });
});
