// libtritonserver.so as backends expect it (spec §6.1): SONAME libtritonserver.so, every
// TRITONSERVER_* / TRITONBACKEND_* function a backend may reference exported (Triton's stub list
// plus the spec's additions, and every function Warden's own headers declare), nothing else but
// the WARDEN_* embedding API; backends carry DT_NEEDED libtritonserver.so.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_DIR, LIBTRITONSERVER, PROJECT_ROOT, requireNativeBuild } from './helpers.js';

function exported(lib: string): Set<string> {
  const out = execFileSync('nm', ['-D', '--defined-only', lib], { encoding: 'utf8' });
  return new Set(
    out
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((p) => p.length === 3 && p[1] === 'T')
      .map((p) => p[2]!),
  );
}

function dynamicSection(lib: string): string {
  return execFileSync('readelf', ['-d', lib], { encoding: 'utf8' });
}

/** Function names declared with TRITONSERVER_DECLSPEC / TRITONBACKEND_DECLSPEC in a header. */
function declared(header: string): string[] {
  const text = readFileSync(join(PROJECT_ROOT, 'native', 'include', 'warden', header), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  return [...text.matchAll(/(?:TRITONSERVER|TRITONBACKEND)_DECLSPEC[^;]*?\b((?:TRITONSERVER|TRITONBACKEND)_\w+)\s*\(/g)].map((m) => m[1]!);
}

describe('libtritonserver.so symbols', () => {
  let symbols: Set<string>;
  beforeAll(() => {
    requireNativeBuild();
    symbols = exported(LIBTRITONSERVER);
  });

  it('has SONAME libtritonserver.so', () => {
    expect(dynamicSection(LIBTRITONSERVER)).toMatch(/\(SONAME\)\s+Library soname: \[libtritonserver\.so\]/);
  });

  it("exports every function of Triton's stub library and the spec's additions", () => {
    const reference = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'native', 'triton-api-symbols.txt'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(reference.length).toBeGreaterThanOrEqual(260);
    expect(reference.filter((s) => !symbols.has(s))).toEqual([]);
  });

  it("exports every host function Warden's headers declare (263), and nothing but TRITON*/WARDEN_*", () => {
    const decls = [...declared('tritonserver.h'), ...declared('tritonbackend.h')];
    expect(decls.length).toBe(263);
    expect(decls.filter((s) => !symbols.has(s))).toEqual([]);
    expect([...symbols].filter((s) => !/^(TRITONSERVER_|TRITONBACKEND_|WARDEN_)/.test(s))).toEqual([]);
    // Backend-implemented entry points must NOT come from the host.
    for (const entry of ['TRITONBACKEND_Initialize', 'TRITONBACKEND_ModelInstanceExecute', 'TRITONBACKEND_ModelInitialize']) {
      expect(symbols.has(entry)).toBe(false);
    }
  });

  it('sample backends link libtritonserver.so by SONAME (no RPATH) and export only TRITONBACKEND_*', () => {
    for (const name of ['warden_identity', 'warden_add_sub', 'warden_repeat']) {
      const lib = join(BACKEND_DIR, name, `libtriton_${name}.so`);
      const dyn = dynamicSection(lib);
      expect(dyn).toContain('Shared library: [libtritonserver.so]');
      expect(dyn).not.toMatch(/R(UN)?PATH/);
      const own = [...exported(lib)];
      expect(own).toContain('TRITONBACKEND_ModelInstanceExecute');
      expect(own.filter((s) => !s.startsWith('TRITONBACKEND_'))).toEqual([]);
    }
  });
});
