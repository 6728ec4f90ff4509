/**
 * tritonclient[http] in multi-tenant mode: NVIDIA's client unchanged, with
 * `headers={"Authorization": "Bearer ..."}` — upload with `load_model(config=..., files=...)`,
 * namespaces (two tenants, one model name), 401 without a token. tritonclient[grpc] likewise with
 * `headers={"authorization": "Bearer ..."}` (gRPC metadata keys are lower case: grpcio itself
 * refuses `Authorization`, which the script checks so the docs stay true).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { hashToken } from '../../host/src/tenancy/token.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { useCompatServer } from './harness.js';
import { PROJECT_ROOT } from './venv.js';

const TOKEN_A = 'compat-tenant-a-token-0123456789abcdef';
const TOKEN_B = 'compat-tenant-b-token-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'warden-compat-tenants-'));
const tenantsFile = join(dir, 'tenants.yaml');
writeFileSync(
  tenantsFile,
  `tenants:\n  - id: team-a\n    role: tenant\n    tokens: ['${hashToken(TOKEN_A)}']\n  - id: team-b\n    role: tenant\n    tokens: ['${hashToken(TOKEN_B)}']\n`,
);

describe('tritonclient.http in multi-tenant mode', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [], tenantsFile });

  it('upload, namespaces and 401 with an Authorization header only', async (ctx) => {
    c.skipIfNoClient(ctx);
    await ensureBuilt();
    const wasm = join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm');
    await c.expectScript(
      ctx,
      'tenancy.py',
      ['--token-a', TOKEN_A, '--token-b', TOKEN_B, '--wasm', wasm],
      [
        'no token: 401, health open',
        'tenant A uploads with load_model(config, files)',
        'tenant A infers',
        "tenant B cannot see A's model",
        'tenant B uploads its own m',
        "tenant A unloads its m; B's stays",
      ],
    );
  });
});

describe('tritonclient.grpc in multi-tenant mode', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [], tenantsFile, grpc: true });

  it('upload, namespaces, streams and UNAUTHENTICATED with an authorization metadata entry only', async (ctx) => {
    c.skipIfNoClient(ctx);
    await ensureBuilt();
    const wasm = join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm');
    await c.expectScript(
      ctx,
      'tenancy_grpc.py',
      ['--grpc-url', c.grpcUrl, '--token-a', TOKEN_A, '--token-b', TOKEN_B, '--wasm', wasm],
      [
        'no token: UNAUTHENTICATED, health open',
        'an upper-case Authorization key is refused by grpcio itself',
        "tenant A uploads and infers with headers={'authorization': ...}",
        "tenant B cannot see A's model",
        'a stream carries the token from start_stream(headers=...)',
      ],
    );
  });
});
