/**
 * `warden backend check [file.wasm]`: the server's load-time checks, run before an upload, with
 * the server's own code and so its own error texts: the component against the `sandbox` world
 * (backends/wasm/component-check.ts), and, in a project, the model configuration as the server
 * parses and validates it (config/), the wasm limits it reads from it (backends/wasm/limits.ts,
 * with the server's default caps) and a tenant upload's config allowlist with the default bounds
 * (tenancy/config-allowlist.ts; an operator may give a tenant other bounds).
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { loadModelConfig } from '../config/index.js';
import { checkComponent } from '../backends/wasm/component-check.js';
import { definedMemories } from '../backends/wasm/binary.js';
import { DEFAULT_WASM_LIMITS, modelLimits, type ModelLimits } from '../backends/wasm/limits.js';
import { checkTenantModelConfig } from '../tenancy/config-allowlist.js';
import { DEFAULT_CONFIG_BOUNDS } from '../tenancy/types.js';
import * as err from './kit.errors.js';
import { componentPath, type KitProject } from './project.js';

/** What passed the checks. */
export interface CheckResult {
  component: string;
  /** The component's top-level imports, e.g. `warden:backend/types@0.1.0`. */
  imports: string[];
  exports: string[];
  /** Linear memories its core modules define. */
  memories: number;
  /** In a project: the limits the server would hold the model to (its default caps). */
  limits?: ModelLimits;
}

/**
 * Checks `file` (default the project's `1/model.wasm`) and, in a project, its configuration.
 * @throws TritonError INVALID_ARG with the server's text for a refused component or config,
 *   NOT_FOUND when there is no component
 */
export async function checkProject(project: KitProject | undefined, file?: string): Promise<CheckResult> {
  const component = file ?? (project ? componentPath(project.dir) : 'model.wasm');
  if (!existsSync(component)) throw err.componentNotBuilt(component);
  const bytes = readFileSync(component);
  let limits: ModelLimits | undefined;
  let what = basename(component);
  if (project) {
    const name = project.manifest.name;
    const config = await loadModelConfig(project.dir, { modelName: name, autoComplete: false, versions: [1] });
    checkTenantModelConfig(name, config, DEFAULT_CONFIG_BOUNDS);
    limits = modelLimits(config, DEFAULT_WASM_LIMITS);
    what = `model '${name}' version 1: ${config.default_model_filename || 'model.wasm'}`;
  }
  const surface = checkComponent(bytes, what);
  return {
    component,
    imports: surface.imports.map((i) => i.name),
    exports: surface.exports.map((e) => e.name),
    memories: definedMemories(bytes),
    ...(limits ? { limits } : {}),
  };
}
