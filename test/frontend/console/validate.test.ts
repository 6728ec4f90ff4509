/**
 * The web console's checks that need no page (host/console-assets/validate.js, docs/console.md):
 * the upload form's validation against the tenant's quotas and the server's WIT versions, the
 * config it builds, the inference request template; and the console path rule.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consolePathProblem, isConsolePath } from '../../../host/src/frontend/console/path.js';
import { DEFAULT_TENANT_QUOTAS } from '../../../host/src/tenancy/types.js';
import { BACKEND_API_VERSION, SUPPORTED_BACKEND_API_VERSIONS, backendApiExtension } from '../../../host/src/contract/backend-api.js';
// @ts-expect-error: browser code without type declarations, imported as the page imports it
import * as v from '../../../host/console-assets/validate.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const COMPONENT = new Uint8Array(readFileSync(join(ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')));
const SERVED = v.servedWitVersions(['classification', ...SUPPORTED_BACKEND_API_VERSIONS.map(backendApiExtension)]) as string[];
const FORM = {
  name: 'm1',
  fileBytes: COMPONENT,
  input: { name: 'INPUT0', datatype: 'FP32', dims: '-1' },
  output: { name: 'OUTPUT0', datatype: 'FP32', dims: '2, 3' },
  maxBatchSize: '8',
  instances: '2',
  memoryLimitBytes: '1048576',
  executeTimeoutMs: '',
  logLimitBytes: '',
};
const fields = (problems: { field: string }[]) => problems.map((p) => p.field);

describe('the upload form', () => {
  it('finds the WIT versions a component names, and those a server serves', () => {
    expect(SERVED).toEqual([...SUPPORTED_BACKEND_API_VERSIONS]);
    expect(v.witVersionsOf(COMPONENT)).toEqual([BACKEND_API_VERSION]);
    expect(v.witVersionsOf(new TextEncoder().encode('x warden:backend/host@9.9.9 y'))).toEqual(['9.9.9']);
    expect(v.witVersionsOf(new TextEncoder().encode('not a component'))).toEqual([]);
  });

  it('passes a form within the quotas and builds its config', () => {
    expect(v.validateUpload(FORM, { quotas: DEFAULT_TENANT_QUOTAS, served: SERVED })).toEqual([]);
    expect(v.buildConfig(FORM)).toEqual({
      backend: 'wasm',
      max_batch_size: 8,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [2, 3] }],
      instance_group: [{ kind: 'KIND_CPU', count: 2 }],
      parameters: { memory_limit_bytes: { string_value: '1048576' } },
    });
  });

  it('refuses each field over its quota or malformed, naming the quota', () => {
    const quotas = { ...DEFAULT_TENANT_QUOTAS, max_upload_bytes: 100 };
    const bad = {
      ...FORM,
      name: '-x',
      input: { name: '', datatype: 'FP99', dims: '0' },
      instances: '5',
      memoryLimitBytes: String(DEFAULT_TENANT_QUOTAS.max_memory_per_instance_bytes + 1),
      executeTimeoutMs: '1.5',
      logLimitBytes: String(DEFAULT_TENANT_QUOTAS.max_log_bytes + 1),
    };
    const problems = v.validateUpload(bad, { quotas, served: SERVED });
    expect(fields(problems)).toEqual([
      'name',
      'file',
      'inputName',
      'inputDatatype',
      'inputDims',
      'instances',
      'memoryLimitBytes',
      'executeTimeoutMs',
      'logLimitBytes',
    ]);
    expect(problems.find((p: { field: string }) => p.field === 'file').message).toMatch(/your upload limit is 100 bytes/);
    expect(problems.find((p: { field: string }) => p.field === 'instances').message).toMatch(/max_instances_per_model\) is 4/);
  });

  it('refuses a component built against a WIT version the server does not serve, and a missing file', () => {
    const future = new TextEncoder().encode('\0asm warden:backend/backend@99.0.0');
    expect(v.validateUpload({ ...FORM, fileBytes: future }, { served: SERVED })[0].message).toMatch(/warden:backend@99\.0\.0; this server serves/);
    expect(fields(v.validateUpload({ ...FORM, fileBytes: undefined }, { served: SERVED }))).toEqual(['file']);
    // The operator has no quotas: only the form's own rules apply.
    expect(v.validateUpload({ ...FORM, instances: '64' }, { served: SERVED })).toEqual([]);
  });

  it('builds a request from model metadata and means from statistics', () => {
    const meta = { inputs: [{ name: 'A', datatype: 'INT32', shape: [-1, 2] }], outputs: [{ name: 'B', datatype: 'INT32', shape: [2] }] };
    expect(v.requestTemplate(meta)).toEqual({ inputs: [{ name: 'A', datatype: 'INT32', shape: [1, 2], data: [0, 0] }], outputs: [{ name: 'B' }] });
    expect(v.meanMs({ count: 4, ns: 8_000_000 })).toBe(2);
    expect(v.meanMs({ count: 0, ns: 0 })).toBeUndefined();
    expect(atob(v.toBase64(new Uint8Array([0, 255, 1])))).toBe('\0\xff\x01');
  });
});

describe('the console path', () => {
  it('is a plain path outside the API', () => {
    expect(consolePathProblem('/console')).toBeUndefined();
    expect(consolePathProblem('/ops/console')).toBeUndefined();
    for (const bad of ['console', '/console/', '/', '/v2', '/v2/console', '/v1', '/a b', '/../x']) expect(consolePathProblem(bad), bad).toBeDefined();
    expect([isConsolePath('/console', '/console'), isConsolePath('/console', '/console/app.js'), isConsolePath('/console', '/consoles')]).toEqual([
      true,
      true,
      false,
    ]);
  });
});
