/**
 * `warden tenants` (host/src/tenancy/cli.ts) run in-process, its output collected: for the tests
 * that edit a tenants file the way an operator does (docs/tenancy.md "The tenants file").
 */
import { expect } from 'vitest';
import { runTenantsCli } from '../../host/src/tenancy/cli.js';

/** What one `warden tenants` run returned and wrote. */
export interface TenantsCliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `warden tenants <argv>`: its exit code and everything it wrote to stdout and stderr. */
export async function runTenants(...argv: string[]): Promise<TenantsCliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runTenantsCli(argv, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } });
  return { code, stdout, stderr };
}

/** Run `warden tenants <argv> --tenants <file>`, expecting exit code 0 (else the test fails with its stderr); returns its stdout trimmed (the token `add` / `rotate` print). */
export async function tenantsCommand(file: string, ...argv: string[]): Promise<string> {
  const r = await runTenants(...argv, '--tenants', file);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}
