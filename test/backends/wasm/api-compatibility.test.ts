/**
 * The compatibility guard of the `warden:backend` WIT package (wit/README.md "Compatibility"):
 * components built against `0.1.0` keep loading and serving on every engine — the C sample
 * `preprocess` as it was built against `0.1.0` (frozen in test/fixtures/wasm/api-0.1.0/), and the
 * componentize-js sample `add_sub` with its `warden:backend` names set back to `0.1.0` (what its
 * `0.1.0` build was: `0.1.1` only added `inference`, which it does not import) — and a component
 * built against a version the server does not serve is refused at load with an error naming the
 * import or export and the versions served. The server announces each served version in its
 * metadata's extensions.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_API_VERSION, backendApiExtension, SUPPORTED_BACKEND_API_VERSIONS } from '../../../host/src/contract/backend-api.js';
import { checkComponent } from '../../../host/src/backends/wasm/component-check.js';
import type { WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import { serverExtensions } from '../../../host/src/dataplane/server-api.js';
import * as h from './helpers.js';

/** The version the guarded components were built against. */
const GUARDED = '0.1.0';

/** A sample component of model_repository/ (built by scripts/build-wasm.mjs against the current version). */
const sample = (model: string) => readFileSync(join(h.REPO, model, '1', 'model.wasm'));

/** `bytes` with every `from` replaced by `to` (same length, so the binary's name lengths stay right). */
function renamed(bytes: Uint8Array, from: string, to: string): Uint8Array {
  expect(to.length).toBe(from.length);
  const out = Buffer.from(bytes);
  const needle = Buffer.from(from);
  let at = out.indexOf(needle);
  expect(at).toBeGreaterThanOrEqual(0);
  while (at >= 0) {
    Buffer.from(to).copy(out, at);
    at = out.indexOf(needle, at + needle.length);
  }
  return out;
}

/** The guarded components by model name: built against {@link GUARDED}. */
const guarded = (model: string): Uint8Array =>
  model === 'preprocess_wasm'
    ? readFileSync(join(h.FIXTURES, `api-${GUARDED}`, 'preprocess.wasm'))
    : renamed(sample(model), `@${BACKEND_API_VERSION}`, `@${GUARDED}`);

/** A model directory holding `bytes` as its version 1 component (removed after the file's tests). */
const dirs: string[] = [];
function modelDir(model: string, bytes: Uint8Array): string {
  const dir = mkdtempSync(join(tmpdir(), 'warden-api-compat-'));
  dirs.push(dir);
  mkdirSync(join(dir, model, '1'), { recursive: true });
  writeFileSync(join(dir, model, '1', 'model.wasm'), bytes);
  return join(dir, model);
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

beforeAll(() => h.ensureBuilt());

describe(`components built against warden:backend@${GUARDED}`, () => {
  it.each(['add_sub_wasm', 'preprocess_wasm'])(
    `%s names @${GUARDED} in its imports and export (when wit/ moves on past a compatible version, freeze a @${GUARDED} build of it as a fixture)`,
    (model) => {
      const surface = checkComponent(guarded(model));
      const warden = [...surface.imports, ...surface.exports].map((i) => i.name).filter((n) => n.startsWith('warden:'));
      expect(warden.length).toBeGreaterThan(1);
      for (const name of warden) expect(name).toMatch(new RegExp(`@${GUARDED.replace(/\./g, '\\.')}$`));
      expect(SUPPORTED_BACKEND_API_VERSIONS).toContain(GUARDED);
    },
  );

  describe.each(h.ENGINES)('still serve on the %s engine', (engine) => {
    let resolver: WasmBackendResolver;
    beforeAll(() => {
      resolver = h.newResolver(engine);
    });
    afterAll(() => resolver.finalizeAll());

    it('add_sub_wasm (componentize-js): OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1', async () => {
      const config = h.wasmConfig(
        'add_sub_wasm',
        [
          ['INPUT0', 'FP32', [-1]],
          ['INPUT1', 'FP32', [-1]],
        ],
        [
          ['OUTPUT0', 'FP32', [-1]],
          ['OUTPUT1', 'FP32', [-1]],
        ],
      );
      const model = await h.loadModel(resolver, config, modelDir('add_sub_wasm', guarded('add_sub_wasm')));
      const inst = await model.createInstance(h.instanceSpec('add_sub_wasm'));
      const a = Float32Array.of(1, 2, 3);
      const b = Float32Array.of(0.5, 0.5, 4);
      const rec = await h.infer(
        inst,
        h.request('add_sub_wasm', [h.tensor('INPUT0', 'FP32', [3], a), h.tensor('INPUT1', 'FP32', [3], b)], ['OUTPUT0', 'OUTPUT1']),
      );
      expect(rec.errors).toEqual([]);
      expect([...h.f32(rec.responses[0]!.outputs[0]!)]).toEqual([1.5, 2.5, 7]);
      expect([...h.f32(rec.responses[0]!.outputs[1]!)]).toEqual([0.5, 1.5, -1]);
      await model.finalize();
    });

    it('preprocess_wasm (C): a 1x1 white image becomes (1 - mean) / std per channel', async () => {
      const config = h.wasmConfig('preprocess_wasm', [['IMAGE', 'UINT8', [-1, -1, 3]]], [['OUTPUT', 'FP32', [3, 2, 2]]]);
      const model = await h.loadModel(resolver, config, modelDir('preprocess_wasm', guarded('preprocess_wasm')));
      const inst = await model.createInstance(h.instanceSpec('preprocess_wasm'));
      const rec = await h.infer(inst, h.request('preprocess_wasm', [h.tensor('IMAGE', 'UINT8', [1, 1, 3], Uint8Array.of(255, 255, 255))], ['OUTPUT']));
      expect(rec.errors).toEqual([]);
      const out = h.f32(rec.responses[0]!.outputs[0]!);
      const want = [(1 - 0.485) / 0.229, (1 - 0.456) / 0.224, (1 - 0.406) / 0.225];
      out.forEach((v, i) => expect(v).toBeCloseTo(want[Math.floor(i / 4)]!, 4));
      await model.finalize();
    });
  });
});

describe('a version the server does not serve', () => {
  const served = SUPPORTED_BACKEND_API_VERSIONS.map((v) => `warden:backend@${v}`).join(', ');

  it('imports of warden:backend@1.0.0: refused naming the import and the versions served', () => {
    const future = renamed(sample('preprocess_wasm'), `@${BACKEND_API_VERSION}`, '@1.0.0');
    expect(() => checkComponent(future)).toThrow(`model.wasm imports 'warden:backend/types@1.0.0' (this host serves ${served});`);
  });

  it('an export of warden:backend/backend@1.0.0: refused naming the export and the versions served', () => {
    const future = renamed(sample('preprocess_wasm'), `warden:backend/backend@${BACKEND_API_VERSION}`, 'warden:backend/backend@1.0.0');
    expect(() => checkComponent(future)).toThrow(
      `model.wasm exports 'warden:backend/backend@1.0.0', built against a warden:backend version this host does not serve (it serves ${served})`,
    );
  });
});

it('the server metadata announces every served version as an extension', () => {
  const extensions = serverExtensions({ clientShm: false });
  for (const v of SUPPORTED_BACKEND_API_VERSIONS) expect(extensions).toContain(backendApiExtension(v));
  expect(extensions).toContain(`sandboxed_backend(warden:backend@${GUARDED})`);
});
