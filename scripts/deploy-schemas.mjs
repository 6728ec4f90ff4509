#!/usr/bin/env node
// Regenerates the JSON schemas vendored in deploy/schemas/ (read by kubeconform in
// test/deploy/deploy.test.ts), from the sources that deploy/schemas/PROVENANCE.md names:
//
//   node scripts/deploy-schemas.mjs --kubernetes=<swagger.json> --crd=<crd.yaml> [--crd=...]
//
// Kubernetes kinds: the OpenAPI v2 definitions of KINDS, every $ref inlined (one standalone file
// per kind), every object with properties closed (additionalProperties: false, kubeconform's
// "strict"), int-or-string and Quantity as oneOf, apiVersion/kind pinned: the layout and rules of
// openapi2jsonschema's "-standalone-strict" output that kubeconform reads
// (<version>-standalone-strict/<kind>-<group>-<version>.json).
// CRDs: each served version's openAPIV3Schema, closed the same way except where the CRD preserves
// unknown fields, x-kubernetes-int-or-string as oneOf, nullable as a null type, written as
// crds/<group>/<kind>_<version>.json. Descriptions are dropped (size); nothing else is changed.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'deploy', 'schemas');

/** The Kubernetes kinds the chart renders: [definition name, group ('' = core), version]. */
const KINDS = [
  ['io.k8s.api.apps.v1.Deployment', 'apps', 'v1'],
  ['io.k8s.api.core.v1.Service', '', 'v1'],
  ['io.k8s.api.core.v1.Secret', '', 'v1'],
  ['io.k8s.api.core.v1.ServiceAccount', '', 'v1'],
  ['io.k8s.api.policy.v1.PodDisruptionBudget', 'policy', 'v1'],
  ['io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler', 'autoscaling', 'v2'],
];

const args = process.argv.slice(2);
const arg = (name) => args.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');

function kubernetes(swaggerPath) {
  const swagger = JSON.parse(readFileSync(swaggerPath, 'utf8'));
  const defs = swagger.definitions;
  const version = swagger.info.version; // e.g. v1.27.0
  const dir = join(out, 'kubernetes', `${version}-standalone-strict`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const convert = (schema, stack) => {
    if (Array.isArray(schema)) return schema.map((s) => convert(s, stack));
    if (schema === null || typeof schema !== 'object') return schema;
    if (typeof schema.$ref === 'string') {
      const name = schema.$ref.replace('#/definitions/', '');
      if (stack.includes(name)) return {}; // a recursive type (none among KINDS): left open
      return convert(defs[name], [...stack, name]);
    }
    const r = {};
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'description' || k.startsWith('x-kubernetes-') || k === 'x-kubernetes-group-version-kind') continue;
      r[k] = k === 'properties' ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, convert(s, stack)])) : convert(v, stack);
    }
    if (r.format === 'int-or-string') return { oneOf: [{ type: 'string' }, { type: 'integer' }] };
    if (stack.at(-1) === 'io.k8s.apimachinery.pkg.api.resource.Quantity' && r.type === 'string') return { oneOf: [{ type: 'string' }, { type: 'number' }] };
    if (r.properties && r.additionalProperties === undefined) r.additionalProperties = false;
    return r;
  };
  const written = [];
  for (const [name, group, v] of KINDS) {
    const def = defs[name];
    if (!def) throw new Error(`${swaggerPath}: no definition ${name}`);
    const kind = name.split('.').at(-1);
    const schema = convert(def, [name]);
    const apiVersion = group === '' ? v : `${group}/${v}`;
    schema.properties.apiVersion = { type: 'string', enum: [apiVersion] };
    schema.properties.kind = { type: 'string', enum: [kind] };
    schema.$schema = 'http://json-schema.org/schema#';
    const file = `${kind.toLowerCase()}${group === '' ? '' : `-${group.split('.')[0]}`}-${v}.json`;
    writeFileSync(join(dir, file), `${JSON.stringify(schema)}\n`);
    written.push(file);
  }
  return { source: swaggerPath, sha256: sha256(swaggerPath), version, written };
}

function crd(path) {
  const written = [];
  for (const doc of parseAllDocuments(readFileSync(path, 'utf8'))) {
    const c = doc.toJS();
    if (c?.kind !== 'CustomResourceDefinition') continue;
    const { group, names } = c.spec;
    const close = (s) => {
      if (Array.isArray(s)) return s.map(close);
      if (s === null || typeof s !== 'object') return s;
      const r = {};
      for (const [k, v] of Object.entries(s)) {
        if (k === 'description' || k.startsWith('x-kubernetes-') || k === 'nullable') continue;
        r[k] = k === 'properties' ? Object.fromEntries(Object.entries(v).map(([p, x]) => [p, close(x)])) : close(v);
      }
      if (s['x-kubernetes-int-or-string'] === true) {
        delete r.type;
        delete r.anyOf;
        r.oneOf = [{ type: 'string' }, { type: 'integer' }];
      }
      if (r.properties && r.additionalProperties === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true) r.additionalProperties = false;
      if (s.nullable === true && typeof r.type === 'string') r.type = [r.type, 'null'];
      return r;
    };
    for (const v of c.spec.versions) {
      if (!v.served) continue;
      const schema = close(v.schema.openAPIV3Schema);
      schema.properties = schema.properties ?? {};
      schema.properties.apiVersion = { type: 'string', enum: [`${group}/${v.name}`] };
      schema.properties.kind = { type: 'string', enum: [names.kind] };
      schema.properties.metadata = { type: 'object' };
      schema.$schema = 'http://json-schema.org/schema#';
      const dir = join(out, 'crds', group);
      mkdirSync(dir, { recursive: true });
      const file = `${names.kind.toLowerCase()}_${v.name}.json`;
      writeFileSync(join(dir, file), `${JSON.stringify(schema)}\n`);
      written.push(`${group}/${file}`);
    }
  }
  return { source: path, sha256: sha256(path), written };
}

const report = { kubernetes: arg('kubernetes').map(kubernetes), crds: arg('crd').map(crd) };
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
