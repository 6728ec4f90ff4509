/**
 * The "known good start" memo of uploaded models (DESIGN "Multi-tenancy": many tenant models per
 * host; "Sandbox rules"): which start inputs — component and files, engine, normalised config,
 * limits, instance placement — have already started an instance (`model.create` and
 * `instance.create` succeeded) in this process. An upload's instance whose inputs are known comes
 * up released, as after an idle release (./backend.ts, the engines' idle path), so that its load
 * answers in milliseconds and its first request pays the cold start; anything else starts at
 * load, so that a new component's `create` errors still fail the load.
 *
 * Per namespace: a tenant's entries are looked up, added and evicted only by that tenant's loads
 * (each namespace has its own bound), so one tenant's uploads change nothing — not even the
 * timing — of another's loads.
 *
 * The model's own name is left out of the key (masked in the config, the instance group names
 * and the instance names): many uploads of one component under different names are what the
 * memo is for. A guest whose `create` depends on its model's name, or is not deterministic, may
 * therefore fail at its first request instead of at load.
 */
import { createHash } from 'node:crypto';
import type { InstanceSpec } from '../../contract/types.js';
import type { ModelConfig } from '../../contract/model-config.js';
import type { ModelLimits } from './limits.js';

/** Entries kept per namespace (least recently used evicted first). */
export const KNOWN_STARTS_PER_NAMESPACE = 256;

/** Everything of a model version that its instances' `create`s can see, but the model's name. */
export interface ModelStartInputs {
  /** The engine that runs the instances. */
  engine: string;
  /** Every file of the upload by path relative to the model directory → SHA-256, hex (the component's among them). */
  digests: ReadonlyMap<string, string>;
  version: number;
  /** The normalised config (what the guest gets as JSON in `model.create`). */
  config: ModelConfig;
  /** The limits the sandboxes run under. */
  limits: ModelLimits;
}

/** `s` with the model's name `name` (alone or as the `<name>_` prefix of a default group name) masked. */
function masked(name: string, s: string): string {
  if (s === name) return '\u0000';
  return s.startsWith(`${name}_`) ? `\u0000${s.slice(name.length)}` : s;
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

const json = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));

/** The model-wide part of the memo key (SHA-256, hex) of a version's start inputs. */
export function modelStartKey(i: ModelStartInputs): string {
  const name = i.config.name;
  const config = { ...i.config, name: masked(name, name), instance_group: i.config.instance_group.map((g) => ({ ...g, name: masked(name, g.name) })) };
  const files = [...i.digests.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(json({ engine: i.engine, files, version: i.version, config, limits: i.limits }));
}

/** The memo key (SHA-256, hex) of one instance of the model whose {@link modelStartKey} is `model`, named `modelName`. */
export function instanceStartKey(model: string, modelName: string, spec: InstanceSpec): string {
  return sha256(json({ model, name: masked(modelName, spec.name), kind: spec.kind, deviceId: spec.deviceId }));
}

/** The memo: per namespace, a bounded set of start keys (see the module comment). */
export class KnownStarts {
  private readonly byNamespace = new Map<string, Set<string>>();

  /** @throws RangeError for a bound that is not a positive integer */
  constructor(readonly perNamespace = KNOWN_STARTS_PER_NAMESPACE) {
    if (!Number.isInteger(perNamespace) || perNamespace < 1) throw new RangeError(`known starts per namespace must be a positive integer, got ${perNamespace}`);
  }

  /** Whether `key` started in `namespace` (and marks it the most recently used). */
  has(namespace: string, key: string): boolean {
    const keys = this.byNamespace.get(namespace);
    if (!keys?.has(key)) return false;
    keys.delete(key);
    keys.add(key);
    return true;
  }

  /** `key` started in `namespace`; the namespace's least recently used entry goes beyond the bound. */
  add(namespace: string, key: string): void {
    let keys = this.byNamespace.get(namespace);
    if (!keys) this.byNamespace.set(namespace, (keys = new Set()));
    keys.delete(key);
    keys.add(key);
    if (keys.size > this.perNamespace) keys.delete(keys.values().next().value!);
  }

  /** `key` failed to start in `namespace` after all (its next load starts at load again). */
  forget(namespace: string, key: string): void {
    const keys = this.byNamespace.get(namespace);
    if (!keys) return;
    keys.delete(key);
    if (keys.size === 0) this.byNamespace.delete(namespace);
  }

  /** Entries of `namespace` (for tests). */
  size(namespace: string): number {
    return this.byNamespace.get(namespace)?.size ?? 0;
  }
}
