/**
 * The layering of host/src (docs/architecture.md, "Layers"): which folder may import which,
 * checked over every import — type-only ones included — and no import cycle at run time.
 * dependency-cruiser parses and resolves the imports; the table below is the rule.
 *
 * Direction: contract ← config, tensor, trace, cache, metrics, repository, tenancy, platform ←
 * backends, ensemble ← scheduler ← lifecycle ← dataplane ← frontend; `server.ts` and the CLI
 * (the composition root) may import anything.
 */
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

/** Every folder may import `contract/` and `project.ts` (the leaves); beyond them, this table. */
const ALLOWED: Record<string, readonly string[]> = {
  contract: [],
  project: [],
  platform: [],
  threads: [],
  config: [],
  tensor: [],
  trace: [],
  cache: [],
  metrics: [],
  repository: [],
  // the ensemble kind's scheduler runs the ensemble's plan (ensemble/scheduler.ts), with the version's statistics
  scheduler: ['config', 'tensor', 'ensemble', 'metrics'],
  tenancy: ['config'],
  backends: ['config'],
  'backends/native': ['backends', 'config', 'tensor', 'repository', 'platform', 'threads'],
  'backends/onnxruntime': ['backends', 'config', 'tensor', 'repository', 'platform', 'threads'],
  'backends/python': ['backends', 'config', 'tensor', 'repository', 'platform', 'threads'],
  'backends/wasm': ['backends', 'config', 'tensor', 'repository', 'platform', 'threads'],
  ensemble: ['config', 'tensor', 'metrics', 'tenancy'],
  lifecycle: ['config', 'tensor', 'repository', 'scheduler', 'ensemble', 'cache', 'metrics', 'trace'],
  dataplane: ['config', 'tensor', 'lifecycle', 'ensemble', 'tenancy', 'trace'],
  // the one admission of every frontend entry (frontend/admission.ts) is built on the tenant registry and rates
  frontend: ['dataplane', 'tenancy'],
  'frontend/http': ['frontend', 'frontend/openai', 'frontend/console', 'dataplane', 'config', 'tensor', 'tenancy', 'trace', 'threads'],
  // the web console's static routes carry their OpenAPI description (frontend/http/openapi/)
  'frontend/console': ['frontend/http'],
  // the OpenAI-compatible API is routed, authenticated and answered by the HTTP frontend, on its data-plane calls
  'frontend/openai': ['frontend', 'frontend/http', 'dataplane', 'tensor', 'trace', 'threads'],
  'frontend/grpc': ['frontend', 'dataplane', 'config', 'tensor', 'tenancy', 'trace'],
  // the tenant backend kit (`warden backend ...`) runs the server's own checks, engines and config allowlist, no server
  kit: ['config', 'tensor', 'tenancy', 'backends/wasm'],
};

/** Single files allowed across the table, each with the reason it is not a folder rule. */
const EXCEPTIONS: readonly { from: string; to: string; why: string }[] = [
  { from: 'tenancy', to: 'backends/wasm/limits.ts', why: "a tenant's sandbox limits are written into its wasm model configs" },
  { from: 'frontend/http', to: 'repository/overrides.ts', why: "the load API's file overrides are parsed where they arrive" },
  { from: 'frontend/http', to: 'platform/addon.ts', why: "the public port's accept thread (native-accept.ts) is the addon's Acceptor" },
  {
    from: 'frontend/http',
    to: 'lifecycle/model-version.ts',
    why: "the native data path (data-path/) submits to a version's instances and withdraws before it retires",
  },
  { from: 'frontend/http', to: 'metrics/stats.ts', why: "the native data path hands what it served to the version's statistics" },
  { from: 'frontend/http', to: 'metrics/prometheus.ts', why: 'the native data path hands its statistics over before each metrics render' },
  { from: 'frontend/grpc', to: 'repository/overrides.ts', why: "the load API's file overrides are parsed where they arrive" },
];

/** The layer a host/src file belongs to: its folder (backends/ and frontend/ by sub-folder); the root files by name. */
function layer(file: string): string {
  const parts = file.replace(/^host\/src\//, '').split('/');
  if (parts.length === 1) return parts[0] === 'project.ts' ? 'project' : 'root';
  if ((parts[0] === 'backends' || parts[0] === 'frontend') && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0]!;
}

async function cruiseHost(typeImports: boolean): Promise<ICruiseResult> {
  const r = await cruise(['host/src'], {
    tsPreCompilationDeps: typeImports,
    doNotFollow: { path: 'node_modules' },
    // TypeScript's ESM convention: `./x.js` names `./x.ts` (enhanced-resolve's extensionAlias,
    // passed through though dependency-cruiser's typings do not list it).
    enhancedResolveOptions: { extensionAlias: { '.js': ['.ts', '.js'] } } as Record<string, unknown>,
    validate: true,
    ruleSet: { forbidden: [{ name: 'no-cycle', severity: 'error', from: {}, to: { circular: true } }] },
  });
  return r.output as ICruiseResult;
}

type Module = { source: string; dependencies: readonly { resolved: string; module: string; couldNotResolve?: boolean }[] };

/** The imports of `modules` the table does not allow, and relative imports that resolve nowhere. */
function violations(modules: readonly Module[]): { broken: string[]; unresolved: string[] } {
  const broken: string[] = [];
  const unresolved: string[] = [];
  for (const m of modules) {
    if (!m.source.startsWith('host/src/')) continue;
    const from = layer(m.source);
    if (from === 'root') continue;
    if (!ALLOWED[from]) {
      broken.push(`${m.source}: folder '${from}' is not in the layer table`);
      continue;
    }
    for (const d of m.dependencies) {
      if (d.couldNotResolve && d.module.startsWith('.')) unresolved.push(`${m.source} -> ${d.module}`);
      if (!d.resolved.startsWith('host/src/')) continue;
      const to = layer(d.resolved);
      if (to === from || to === 'contract' || to === 'project' || ALLOWED[from]!.includes(to)) continue;
      const rel = d.resolved.replace(/^host\/src\//, '');
      if (EXCEPTIONS.some((e) => e.from === from && e.to === rel)) continue;
      broken.push(`${m.source} -> ${d.resolved} (${from} may not import ${to})`);
    }
  }
  return { broken, unresolved };
}

describe('host/src imports', () => {
  it('follow the layer table (every import, type-only included)', async () => {
    const out = await cruiseHost(true);
    expect(out.modules.filter((m) => m.source.startsWith('host/src/')).length).toBeGreaterThan(150);
    const { broken, unresolved } = violations(out.modules);
    expect(unresolved).toEqual([]);
    expect(broken).toEqual([]);
  });

  it('have no cycle at run time (type-only imports are erased)', async () => {
    const out = await cruiseHost(false);
    const cycles = out.summary.violations
      .filter((v) => v.rule.name === 'no-cycle')
      .map((v) => (v.cycle ?? []).map((c) => (typeof c === 'string' ? c : c.name)).join(' > '));
    expect(out.summary.totalCruised).toBeGreaterThan(150);
    expect(cycles).toEqual([]);
  });

  it('the check refuses what the table forbids: a frontend reaching the lifecycle, an unknown folder', () => {
    const dep = (resolved: string) => ({ resolved, module: './x.js' });
    const { broken } = violations([
      {
        source: 'host/src/frontend/http/x.ts',
        dependencies: [dep('host/src/lifecycle/repository-manager.ts'), dep('host/src/dataplane/server-api.ts'), dep('host/src/contract/errors.ts')],
      },
      { source: 'host/src/contract/x.ts', dependencies: [dep('host/src/config/json.ts')] },
      { source: 'host/src/tenancy/x.ts', dependencies: [dep('host/src/backends/wasm/limits.ts'), dep('host/src/backends/wasm/engines.ts')] },
      { source: 'host/src/newfolder/x.ts', dependencies: [] },
    ]);
    expect(broken).toEqual([
      'host/src/frontend/http/x.ts -> host/src/lifecycle/repository-manager.ts (frontend/http may not import lifecycle)',
      'host/src/contract/x.ts -> host/src/config/json.ts (contract may not import config)',
      'host/src/tenancy/x.ts -> host/src/backends/wasm/engines.ts (tenancy may not import backends/wasm)',
      "host/src/newfolder/x.ts: folder 'newfolder' is not in the layer table",
    ]);
  });
});
