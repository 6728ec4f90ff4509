/**
 * The tenants file is picked up by a running server (docs/tenancy.md "The tenants file";
 * host/src/tenancy/watch.ts): the file is edited with the `warden tenants` commands
 * (host/src/tenancy/cli.ts) while the server runs, and without a restart a new tenant's token
 * works, a rotated tenant's new token works and its old one stops (HTTP, the `/infer` fast path
 * and gRPC alike), a removed tenant's token stops, and a file that does not parse keeps the
 * previous tenants. Each change is awaited by polling the server.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { simpleInfer, tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../helpers/grpc.js';
import { fetchJson, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';
import { sleep, until } from '../helpers/wait.js';
import { tenantsCommand } from '../helpers/tenants-cli.js';

let repo: TempRepo;
let dir: string;
let tenantsFile: string;
let server: RunningServer;
let client: TritonGrpcClient;

/** `warden tenants <argv>` on this test's tenants file: the token it printed (add / rotate). */
const tenants = (...argv: string[]): Promise<string> => tenantsCommand(tenantsFile, ...argv);

const A = Array(16).fill(1);
const B = Array(16).fill(2);
/** Status of `/v2/models/simple/infer` (fast path), `/v2/models/simple` (Fastify) and gRPC ModelInfer with `token`. */
async function statuses(token: string): Promise<{ infer: number; metadata: number; grpc: number }> {
  const auth = { authorization: `Bearer ${token}` };
  const infer = await fetchJson(`${server.httpUrl}/v2/models/simple/infer`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(simpleRequest('INT32', A, B)),
  });
  const metadata = await fetchJson(`${server.httpUrl}/v2/models/simple`, { headers: auth });
  const grpc = await unaryCall(client, 'ModelInfer', simpleInfer(A, B), token);
  return { infer: infer.status, metadata: metadata.status, grpc: grpc.err?.code ?? status.OK };
}
const ACCEPTED = { infer: 200, metadata: 200, grpc: status.OK };
const REFUSED = { infer: 401, metadata: 401, grpc: status.UNAUTHENTICATED };

/** Polls until `token` gets `want` on all three paths (the watcher reloads within ~0.1 s; its poll fallback within 2 s). */
async function settles(token: string, want: typeof ACCEPTED): Promise<void> {
  let got: typeof ACCEPTED | undefined;
  await until(async () => JSON.stringify((got = await statuses(token))) === JSON.stringify(want), { within: 15_000, every: 100 }).catch(() => undefined);
  expect(got).toEqual(want);
}

let acme1: string;

beforeAll(async () => {
  repo = tempRepo(['simple']);
  dir = mkdtempSync(join(tmpdir(), 'warden-hot-reload-'));
  tenantsFile = join(dir, 'tenants.yaml');
  acme1 = await tenants('add', 'acme', '--share', 'simple');
  server = await startTestServer(repo, {
    loadModels: ['simple'],
    grpcPort: 0,
    tenantsFile,
    uploadDirectory: join(dir, 'uploads'),
  });
  client = tritonGrpcClient(server.grpcUrl!);
});

afterAll(async () => {
  client?.close();
  await server?.stop();
  repo?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the tenants file edited under a running server', () => {
  it("the first tenant's token works", async () => {
    expect(await statuses(acme1)).toEqual(ACCEPTED);
  });

  it("`tenants add`: the new tenant's token starts working", async () => {
    const bob = await tenants('add', 'bob', '--share', 'simple');
    await settles(bob, ACCEPTED);
    expect(await statuses(acme1)).toEqual(ACCEPTED);
  });

  it('`tenants rotate`: the new token works and the old one stops', async () => {
    const acme2 = await tenants('rotate', 'acme');
    expect(acme2).not.toBe(acme1);
    await settles(acme1, REFUSED);
    await settles(acme2, ACCEPTED);
    acme1 = acme2;
  });

  it("`tenants remove`: the removed tenant's token stops; the others keep working", async () => {
    const carol = await tenants('add', 'carol', '--share', 'simple');
    await settles(carol, ACCEPTED);
    await tenants('remove', 'carol');
    await settles(carol, REFUSED);
    expect(await statuses(acme1)).toEqual(ACCEPTED);
  });

  it('a file that does not parse keeps the previous tenants; the next good file applies', async () => {
    const good = readFileSync(tenantsFile, 'utf8');
    writeFileSync(tenantsFile, 'tenants: [ {{ this is not yaml\n');
    // Give the watcher time to read and refuse it, then check the previous tenants still hold.
    await sleep(2500);
    expect(await statuses(acme1)).toEqual(ACCEPTED);
    writeFileSync(tenantsFile, good);
    const dave = await tenants('add', 'dave', '--share', 'simple');
    await settles(dave, ACCEPTED);
    expect(await statuses(acme1)).toEqual(ACCEPTED);
  });
});
