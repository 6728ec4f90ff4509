/**
 * The deployment artefacts in deploy/ (README "Deploy on Kubernetes"):
 * - the Helm chart, linted and rendered by `helm` (built from its Go module by
 *   scripts/deploy-tools.mjs), with the default values and with every feature on
 *   (deploy/helm/warden/ci/all-features-values.yaml); the rendered flags are Warden's own
 *   command line (parseCli accepts them);
 * - every rendered manifest and every file in deploy/kserve and deploy/modelmesh validated by
 *   `kubeconform -strict` against the schemas vendored in deploy/schemas (PROVENANCE.md), and a
 *   manifest with an unknown field rejected (the schemas are the ones used, and closed);
 * - the call sequence of KServe's model agent (kserve pkg/agent: puller.go, downloader.go,
 *   watcher.go) replayed against a real Warden on the agent's model folder.
 * A tool whose Go module cannot be downloaded skips its tests, saying so; any other build failure fails.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { parseCli } from '../../host/src/cli-options.js';
import type { RunningServer } from '../../host/src/server.js';
import { parseTenantsText, TenantRegistry } from '../../host/src/tenancy/index.js';
import { EXAMPLES, PROJECT_ROOT } from '../helpers/repo.js';
import { startTestServer, writeTenantsFile } from '../helpers/servers.js';
import { until } from '../helpers/wait.js';

const CHART = join(PROJECT_ROOT, 'deploy', 'helm', 'warden');
const ALL_FEATURES = join(CHART, 'ci', 'all-features-values.yaml');
const SCHEMAS = join(PROJECT_ROOT, 'deploy', 'schemas');
/** The Kubernetes version whose schemas are vendored (deploy/schemas/PROVENANCE.md). */
const KUBERNETES_VERSION = '1.27.0';

type ToolResult = { path: string; version: string; built: boolean; seconds: number } | { error: string; download: boolean };

/**
 * Builds (or finds) the pinned tools; the build is skipped when the pinned version is there. The
 * first build on a machine takes minutes (helm from source): it runs in a child process while this
 * worker's event loop stays free (a synchronous wait that long would stall vitest's worker RPC).
 */
async function deployTools(): Promise<Record<'helm' | 'kubeconform', ToolResult>> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'scripts', 'deploy-tools.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d).slice(-8192)));
  const status = await new Promise<number | null>((r) => child.on('close', r));
  if (status !== 0) throw new Error(`scripts/deploy-tools.mjs exited ${status}: ${stderr}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<'helm' | 'kubeconform', ToolResult>;
}

const tools = await deployTools();
/** The tool's path; undefined (its tests skipped) only when its Go module could not be downloaded. */
function toolPath(name: 'helm' | 'kubeconform'): string | undefined {
  const t = tools[name];
  if ('path' in t) return t.path;
  if (t.download) return undefined;
  throw new Error(`building ${name} failed (not a download failure):\n${t.error}`);
}
const helm = toolPath('helm');
const kubeconform = toolPath('kubeconform');
const skipReason = (name: 'helm' | 'kubeconform'): string => {
  const t = tools[name];
  return 'error' in t ? `${name}: its Go module could not be downloaded (${t.error.split('\n')[0]})` : '';
};

function run(cmd: string, args: string[], input?: string): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024, cwd: PROJECT_ROOT });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template` of the chart with these values files; throws with helm's message on failure. */
function render(...valuesFiles: string[]): string {
  const r = run(helm!, ['template', 'warden', CHART, '--kube-version', KUBERNETES_VERSION, ...valuesFiles.flatMap((f) => ['--values', f])]);
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout;
}

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec?: Record<string, unknown>; stringData?: Record<string, string> };
const manifests = (yamlText: string): Manifest[] =>
  parseAllDocuments(yamlText)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
const byKind = (ms: Manifest[], kind: string): Manifest[] => ms.filter((m) => m.kind === kind);

type PodSpec = {
  terminationGracePeriodSeconds: number;
  securityContext: Record<string, unknown>;
  volumes: { name: string; secret?: { secretName: string }; emptyDir?: unknown }[];
  containers: {
    args: string[];
    env?: { name: string; valueFrom?: unknown }[];
    envFrom?: { secretRef: { name: string } }[];
    readinessProbe: Record<string, unknown>;
    livenessProbe: Record<string, unknown>;
    startupProbe: Record<string, unknown>;
    lifecycle: { preStop: { exec: { command: string[] } } };
    securityContext: Record<string, unknown>;
    volumeMounts: { name: string; mountPath: string }[];
  }[];
};
const podSpec = (ms: Manifest[]): PodSpec => (byKind(ms, 'Deployment')[0]!.spec as { template: { spec: PodSpec } }).template.spec;

describe.skipIf(!helm)(`helm chart (deploy/helm/warden) ${skipReason('helm')}`, () => {
  it('passes helm lint --strict with the default values and with every feature on', () => {
    for (const extra of [[], ['--values', ALL_FEATURES]]) {
      const r = run(helm!, ['lint', '--strict', CHART, ...extra]);
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('renders by default a Deployment, a Service and a ServiceAccount: HTTP liveness, gRPC readiness, read-only root, non-root, drain inside the grace period', () => {
    const ms = manifests(render());
    expect(ms.map((m) => m.kind).sort()).toEqual(['Deployment', 'Service', 'ServiceAccount']);
    const pod = podSpec(ms);
    const c = pod.containers[0]!;
    expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/v2/health/live', port: 'http' } });
    expect(c.startupProbe).toMatchObject({ httpGet: { path: '/v2/health/live' } });
    expect(c.readinessProbe).toMatchObject({ grpc: { port: 8001 } });
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    // Writable places: the .cache folder (wasm compile cache, repository copies, uploads), /tmp, and
    // /dev/shm in memory (the Python backend's tensors).
    expect(c.volumeMounts.map((v) => v.mountPath).sort()).toEqual(['/dev/shm', '/opt/warden/.cache', '/tmp']);
    expect(pod.volumes.find((v) => v.name === 'shm')?.emptyDir).toEqual({ medium: 'Memory', sizeLimit: '256Mi' });
    // The flags are Warden's command line, and the drain fits the grace period.
    const opts = parseCli(c.args);
    expect(opts.notes.ignoredFlags).toEqual([]);
    expect(opts.modelControlMode).toBe('explicit');
    expect(opts.loadModels).toEqual(['*']);
    const preStop = Number(c.lifecycle.preStop.exec.command[1]);
    expect(preStop + opts.exitTimeoutSecs!).toBeLessThan(pod.terminationGracePeriodSeconds);
    expect(opts.uploadDirectory).toBe('/opt/warden/.cache/uploads');
    expect(opts.repositoryCacheDirectory).toBe('/opt/warden/.cache/repository');
  });

  it('renders every feature: S3 repository and upload store with credentials from a Secret, tenants Secret mounted, Redis, PDB, HPA on a Warden metric, ServiceMonitor', () => {
    const ms = manifests(render(ALL_FEATURES));
    expect(ms.map((m) => m.kind).sort()).toEqual([
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'Secret',
      'Secret',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
    ]);
    const pod = podSpec(ms);
    const c = pod.containers[0]!;
    // $(REDIS_PASSWORD) is expanded by the kubelet from the env entry of the same name.
    expect(c.env?.find((e) => e.name === 'REDIS_PASSWORD')?.valueFrom).toEqual({ secretKeyRef: { name: 'warden-redis', key: 'password' } });
    const opts = parseCli(c.args.map((a) => a.replace('$(REDIS_PASSWORD)', 'example')));
    expect(opts.notes.ignoredFlags).toEqual([]);
    expect(opts.modelRepositories).toEqual(['s3://http://minio.storage:9000/models/warden']);
    expect(opts.modelControlMode).toBe('poll');
    expect(opts.uploadStore).toBe('s3://http://minio.storage:9000/uploads/warden');
    expect(opts.redisCache).toMatchObject({ host: 'redis.cache', port: 6379, password: 'example', db: 1 });
    expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/v2/health/ready', port: 'http' } });

    // Object-store credentials: the chart's Secret, into the environment as AWS_* variables.
    const secrets = byKind(ms, 'Secret');
    const store = secrets.find((s) => s.stringData?.AWS_ACCESS_KEY_ID !== undefined)!;
    expect(c.envFrom).toEqual([{ secretRef: { name: store.metadata.name } }]);
    expect(c.env?.find((e) => e.name === 'AWS_DEFAULT_REGION')).toEqual({ name: 'AWS_DEFAULT_REGION', value: 'us-east-1' });
    // The tenants Secret holds a valid tenants file, mounted where --tenants points.
    const tenants = secrets.find((s) => s !== store)!;
    const [key, text] = Object.entries(tenants.stringData!)[0]!;
    expect(parseTenantsText(text, 'yaml', key).map((t) => t.id)).toEqual(['acme']);
    expect(pod.volumes.find((v) => v.name === 'tenants')?.secret?.secretName).toBe(tenants.metadata.name);
    const mount = c.volumeMounts.find((v) => v.name === 'tenants')!;
    expect(opts.tenantsFile).toBe(`${mount.mountPath}/${key}`);

    const [hpa] = byKind(ms, 'HorizontalPodAutoscaler');
    expect(hpa!.spec).toMatchObject({ minReplicas: 3, maxReplicas: 12, scaleTargetRef: { kind: 'Deployment' } });
    const metrics = hpa!.spec!.metrics as { type: string; pods?: { metric: { name: string } } }[];
    expect(metrics.find((m) => m.type === 'Pods')?.pods?.metric.name).toBe('nv_inference_pending_request_count');
    // With an HPA the Deployment leaves replicas to it.
    expect(byKind(ms, 'Deployment')[0]!.spec!.replicas).toBeUndefined();
    expect(byKind(ms, 'PodDisruptionBudget')[0]!.spec).toMatchObject({ minAvailable: 2 });
    expect(byKind(ms, 'ServiceMonitor')[0]!.spec).toMatchObject({ endpoints: [{ port: 'metrics', path: '/metrics' }] });
  });

  it('refuses values it cannot render correctly', () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'warden-helm-')), 'bad.yaml');
    try {
      writeFileSync(bad, 'responseCache:\n  mode: memcached\n');
      expect(() => render(bad)).toThrow(/responseCache.mode must be none, local or redis/);
      writeFileSync(bad, 'tenants:\n  enabled: true\n');
      expect(() => render(bad)).toThrow(/tenants.content \(or tenants.existingSecret\) is required/);
    } finally {
      rmSync(join(bad, '..'), { recursive: true, force: true });
    }
  });
});

type KubeconformResource = { filename: string; kind: string; name: string; version: string; status: string; msg: string };

/** kubeconform -strict over `files` with the vendored schemas only; one result per resource. */
function validate(files: string[]): KubeconformResource[] {
  const r = run(kubeconform!, [
    '-strict',
    '-verbose',
    '-output',
    'json',
    '-kubernetes-version',
    KUBERNETES_VERSION,
    '-schema-location',
    join(SCHEMAS, 'kubernetes', '{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}', '{{ .ResourceKind }}{{ .KindSuffix }}.json'),
    '-schema-location',
    join(SCHEMAS, 'crds', '{{ .Group }}', '{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json'),
    ...files,
  ]);
  if (r.stdout.trim() === '') throw new Error(`kubeconform printed nothing (exit ${r.status}): ${r.stderr}`);
  return (JSON.parse(r.stdout) as { resources: KubeconformResource[] }).resources;
}

describe.skipIf(!helm || !kubeconform)(`kubeconform -strict over every manifest ${skipReason('kubeconform') || skipReason('helm')}`, () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'warden-kubeconform-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds every rendered manifest and every KServe / ModelMesh file valid against the vendored schemas', () => {
    writeFileSync(join(dir, 'default.yaml'), render());
    writeFileSync(join(dir, 'all-features.yaml'), render(ALL_FEATURES));
    const runtimes = ['kserve', 'modelmesh'].flatMap((d) => readdirSync(join(PROJECT_ROOT, 'deploy', d)).map((f) => join(PROJECT_ROOT, 'deploy', d, f)));
    const results = validate([join(dir, 'default.yaml'), join(dir, 'all-features.yaml'), ...runtimes]);
    const problems = results.filter((r) => r.status !== 'statusValid');
    expect(problems, JSON.stringify(problems, null, 2)).toEqual([]);
    // 3 default + 8 all-features + ClusterServingRuntime, InferenceService, TrainedModel, ServingRuntime.
    expect(results.length).toBe(3 + 8 + 4);
    expect(new Set(results.map((r) => r.kind))).toEqual(
      new Set([
        'Deployment',
        'Service',
        'ServiceAccount',
        'Secret',
        'PodDisruptionBudget',
        'HorizontalPodAutoscaler',
        'ServiceMonitor',
        'ClusterServingRuntime',
        'InferenceService',
        'TrainedModel',
        'ServingRuntime',
      ]),
    );
  });

  it('rejects an unknown field and a wrong type, in a Kubernetes kind and in a KServe kind (the schemas are used, and closed)', () => {
    const deployment = manifests(render()).find((m) => m.kind === 'Deployment')! as Manifest & { spec: { template: { spec: PodSpec } } };
    (deployment.spec.template.spec.containers[0] as unknown as Record<string, unknown>).readinessProbes = {};
    writeFileSync(join(dir, 'bad-deployment.yaml'), JSON.stringify(deployment));
    const runtime = parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy', 'kserve', 'cluster-serving-runtime.yaml'), 'utf8')) as {
      spec: Record<string, unknown>;
    };
    runtime.spec.multiModel = 'yes';
    writeFileSync(join(dir, 'bad-runtime.yaml'), JSON.stringify(runtime));
    // kubeconform validates files concurrently: results come in any order.
    const results = validate([join(dir, 'bad-deployment.yaml'), join(dir, 'bad-runtime.yaml')]).sort((a, b) => a.kind.localeCompare(b.kind));
    expect(results.map((r) => [r.kind, r.status])).toEqual([
      ['ClusterServingRuntime', 'statusInvalid'],
      ['Deployment', 'statusInvalid'],
    ]);
    expect(results[0]!.msg).toMatch(/multiModel/);
    expect(results[1]!.msg).toMatch(/readinessProbes/);
  });
});

describe('runtime definitions launch Warden with flags it accepts', () => {
  const load = (
    path: string,
  ): { spec: { containers: { args: string[]; command?: string[] }[]; multiModel?: boolean; builtInAdapter?: Record<string, unknown> } } =>
    parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy', path), 'utf8'));

  it('KServe: HTTP on 8080, where the model agent sends load / unload; explicit control; everything in /mnt/models loaded at start', () => {
    const runtime = load('kserve/cluster-serving-runtime.yaml');
    expect(runtime.spec.multiModel).toBe(true);
    const opts = parseCli(runtime.spec.containers[0]!.args);
    expect(opts.notes.ignoredFlags).toEqual([]);
    // kserve pkg/agent/puller.go posts to http://localhost:8080/v2/repository/models/<name>/load.
    expect(opts.httpPort).toBe(8080);
    expect(opts.modelRepositories).toEqual(['/mnt/models']);
    expect(opts.modelControlMode).toBe('explicit');
    expect(opts.loadModels).toEqual(['*']);
  });

  it("ModelMesh: the triton-2.x runtime's launch line, run by `tritonserver` (Warden), Triton adapter on gRPC 8001", () => {
    const runtime = load('modelmesh/serving-runtime.yaml');
    expect(runtime.spec.builtInAdapter).toMatchObject({ serverType: 'triton', runtimeManagementPort: 8001 });
    const line = runtime.spec.containers[0]!.args.join(' ');
    expect(line).toMatch(/exec tritonserver /);
    const flags = [...line.matchAll(/"(--[^"]+)"/g)].map((m) => m[1]!);
    const opts = parseCli(flags);
    expect(opts.modelRepositories).toEqual(['/models/_triton_models']);
    expect(opts.modelControlMode).toBe('explicit');
    expect(opts.grpcPort ?? 8001).toBe(8001);
    // Every flag is one Warden honours (--allow-sagemaker=false asks for what Warden does anyway).
    expect(opts.notes.ignoredFlags).toEqual([]);
  });

  it('the image runs tini as PID 1, as a non-root user, with a health check and the launch flags of npm start', () => {
    const file = readFileSync(join(PROJECT_ROOT, 'deploy', 'container', 'Containerfile'), 'utf8');
    const runtimeStage = file.slice(file.lastIndexOf('\nFROM '));
    expect(runtimeStage).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "\/usr\/local\/bin\/warden"\]$/m);
    expect(runtimeStage).toMatch(/^USER 10001:10001$/m);
    expect(runtimeStage).toMatch(/^HEALTHCHECK .*warden-healthcheck/m);
    const shim = readFileSync(join(PROJECT_ROOT, 'deploy', 'container', 'warden'), 'utf8');
    const start = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    const nodeFlags = (s: string): string[] => s.match(/--m(?:in|ax)-semi-space-size=\d+/g) ?? [];
    expect(nodeFlags(shim)).toEqual(nodeFlags(start));
    expect(nodeFlags(shim).length).toBe(2);
  });
});

describe('the tenants file in a mounted Secret (the chart mounts it at /etc/warden/tenants)', () => {
  it("is reloaded when the kubelet swaps the Secret's files: <key> -> ..data/<key>, ..data -> ..<generation>, ..data replaced by a rename", async () => {
    const mount = mkdtempSync(join(tmpdir(), 'warden-secret-mount-'));
    // The kubelet's atomic writer (k8s.io/kubernetes pkg/volume/util/atomic_writer.go): each
    // generation in its own folder, `..data` a symlink to it, the key a symlink through `..data`.
    const generation = (n: number, tenants: { id: string; token: string }[]): void => {
      mkdirSync(join(mount, `..gen${n}`));
      writeTenantsFile(join(mount, `..gen${n}`, 'tenants.json'), tenants);
      symlinkSync(`..gen${n}`, join(mount, '..data_tmp'));
      renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
    };
    generation(1, [{ id: 'acme', token: 'a'.repeat(43) }]);
    symlinkSync('..data/tenants.json', join(mount, 'tenants.json'));
    const registry = await TenantRegistry.open(join(mount, 'tenants.json'), { debounceMs: 10, pollIntervalMs: 100 });
    try {
      expect(registry.get('acme')).toBeDefined();
      generation(2, [{ id: 'globex', token: 'b'.repeat(43) }]);
      rmSync(join(mount, '..gen1'), { recursive: true });
      await until(() => registry.get('globex') !== undefined, { what: 'the new Secret generation' });
      expect(registry.get('acme')).toBeUndefined();
    } finally {
      registry.close();
      rmSync(mount, { recursive: true, force: true });
    }
  });
});

/** One POST as Go's http.Post sends it from the agent: Go's default headers, body `{}`. */
function agentPost(server: RunningServer, path: string): Promise<{ status: number; body: string }> {
  const url = new URL(path, server.httpUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'User-Agent': 'Go-http-client/1.1', 'Content-Type': 'application/json', 'Accept-Encoding': 'gzip', 'Content-Length': '2' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

describe("KServe's model agent against Warden (kserve pkg/agent: watcher.go, puller.go, downloader.go)", () => {
  let root: string;
  let modelDir: string;
  let server: RunningServer | undefined;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'warden-kserve-agent-'));
    modelDir = join(root, 'mnt-models');
    mkdirSync(modelDir);
    // The "bucket": two versions of a model's folder, as storageUri points at them.
    for (const [v, scale] of [
      ['v1', 1],
      ['v2', 2],
    ] as const) {
      const dst = join(root, 'bucket', v, 'simple');
      cpSync(join(EXAMPLES, 'simple'), dst, { recursive: true });
      // The agent loads the model under the TrainedModel's name (a DNS name: no underscore), so the
      // config names that model; v2 is a different configuration (an output renamed) of the same model.
      const config = readFileSync(join(dst, 'config.pbtxt'), 'utf8').replace(/^name: "simple"$/m, 'name: "simple-tm"');
      writeFileSync(join(dst, 'config.pbtxt'), scale === 1 ? config : `${config}\nparameters { key: "revision" value: { string_value: "2" } }\n`);
    }
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const NAME = 'simple-tm';
  const spec = (uri: string) => ({ storageUri: uri, framework: 'onnx', memory: '256Mi' });
  /** downloader.go DownloadModel: copy storageUri's folder to <modelDir>/<name>/ unless SUCCESS.<sha256(spec)> is there, then write it. */
  const download = (s: ReturnType<typeof spec>): void => {
    const success = join(modelDir, NAME, `SUCCESS.${createHash('sha256').update(JSON.stringify(s)).digest('hex')}`);
    try {
      readFileSync(success);
      return;
    } catch {
      // not downloaded yet
    }
    cpSync(join(root, 'bucket', s.storageUri.replace('s3://bucket/', ''), 'simple'), join(modelDir, NAME), { recursive: true });
    writeFileSync(success, JSON.stringify(s));
  };
  /** puller.go, Add: download, then POST .../load with `{}`; the agent counts 200 as loaded. */
  const add = async (s: ReturnType<typeof spec>) => {
    download(s);
    return agentPost(server!, `/v2/repository/models/${NAME}/load`);
  };
  /** puller.go, Remove: delete <modelDir>/<name> first, then POST .../unload with `{}`. */
  const removeFiles = (): void => rmSync(join(modelDir, NAME), { recursive: true, force: true });
  const unload = () => agentPost(server!, `/v2/repository/models/${NAME}/unload`);

  const ready = async (): Promise<number> => (await fetch(`${server!.httpUrl}/v2/models/${NAME}/ready`)).status;
  const infer = async (): Promise<number[] | string> => {
    const data = Array.from({ length: 16 }, (_, i) => i);
    const res = await fetch(`${server!.httpUrl}/v2/models/${NAME}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], data })),
        outputs: [{ name: 'OUTPUT0' }],
      }),
    });
    const body = (await res.json()) as { outputs?: { data: number[] }[]; error?: string };
    return body.outputs?.[0]?.data ?? `${res.status} ${body.error}`;
  };
  const parameters = async (): Promise<Record<string, unknown>> =>
    ((await (await fetch(`${server!.httpUrl}/v2/models/${NAME}/config`)).json()) as { parameters?: Record<string, unknown> }).parameters ?? {};
  const SUM = Array.from({ length: 16 }, (_, i) => 2 * i);

  it('Add: the model is copied in beside its SUCCESS file, loaded by POST load {} (200), and serves', async () => {
    server = await startTestServer(modelDir);
    expect(await ready()).not.toBe(200);
    const r = await add(spec('s3://bucket/v1'));
    expect(r, r.body).toMatchObject({ status: 200 });
    expect(await ready()).toBe(200);
    expect(await infer()).toEqual(SUM);
  });

  it('the same Add again (a re-sync: SUCCESS file present, no download) loads again with 200 and keeps serving', async () => {
    const r = await add(spec('s3://bucket/v1'));
    expect(r.status).toBe(200);
    expect(await ready()).toBe(200);
    expect(await infer()).toEqual(SUM);
  });

  it('a changed TrainedModel is Remove then Add: files deleted, the loaded model still serves until unload (200), then the new one loads (200)', async () => {
    removeFiles();
    expect(await infer()).toEqual(SUM);
    expect((await unload()).status).toBe(200);
    expect(await ready()).not.toBe(200);
    const r = await add(spec('s3://bucket/v2'));
    expect(r, r.body).toMatchObject({ status: 200 });
    expect(await ready()).toBe(200);
    expect(await parameters()).toMatchObject({ revision: { string_value: '2' } });
  });

  it('a restarted Warden container (the agent, whose tracker is unchanged, sends nothing) loads what is in /mnt/models with --load-model=*', async () => {
    await server!.stop();
    server = await startTestServer(modelDir, { loadModels: ['*'] });
    expect(await ready()).toBe(200);
    expect(await infer()).toEqual(SUM);
  });

  it('Remove: files deleted, POST unload {} answers 200, the model is no longer ready nor READY in the index, and a load now fails', async () => {
    removeFiles();
    expect((await unload()).status).toBe(200);
    expect(await ready()).not.toBe(200);
    const index = (await (await fetch(`${server!.httpUrl}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as { name: string; state?: string }[];
    expect(index.filter((m) => m.name === NAME && m.state === 'READY')).toEqual([]);
    // The agent's next Add for a model it no longer has files for would be refused, not served stale.
    expect((await agentPost(server!, `/v2/repository/models/${NAME}/load`)).status).not.toBe(200);
  });
});
