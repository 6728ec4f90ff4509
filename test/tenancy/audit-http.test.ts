/**
 * The HTTP-neutral 401 answers (RFC 6750 challenges), audit records (one info line, `audit: true`,
 * only the listed fields, credentials scrubbed), and the lock file's stale-lock and timeout paths.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { withFileLock, writeFileAtomic } from '../../host/src/tenancy/atomic-file.js';
import { auditEvent, scrub, type AuditRecord } from '../../host/src/tenancy/audit.js';
import { authFailure } from '../../host/src/tenancy/http-auth.js';
import { generateToken, hashToken } from '../../host/src/tenancy/token.js';

describe('authFailure', () => {
  it('challenges without an error code when no credential was sent', () => {
    expect(authFailure('missing')).toEqual({
      status: 401,
      message: "authentication required: send 'Authorization: Bearer <token>'",
      wwwAuthenticate: 'Bearer realm="warden"',
    });
  });

  it('says invalid_token when a credential was sent but is malformed or unknown', () => {
    expect(authFailure('malformed')).toMatchObject({ status: 401, wwwAuthenticate: expect.stringMatching(/^Bearer realm="warden", error="invalid_token"/) });
    expect(authFailure('unknown')).toEqual({
      status: 401,
      message: 'invalid or expired token',
      wwwAuthenticate: 'Bearer realm="warden", error="invalid_token", error_description="invalid or expired token"',
    });
  });
});

describe('auditEvent', () => {
  function capture(): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
    let out = '';
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(c, _e, cb) {
          out += String(c);
          cb();
        },
      }),
    );
    return {
      logger,
      lines: () =>
        out
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>),
    };
  }

  it('writes one info line with audit: true and the given fields', () => {
    const { logger, lines } = capture();
    const event: AuditRecord = {
      event: 'load',
      tenant: 'acme',
      model: 'm',
      version: 1,
      outcome: 'ok',
      remote: '10.0.0.1',
      files: [{ path: '1/model.wasm', sha256: 'ab'.repeat(32), bytes: 1234 }],
    };
    auditEvent(logger, event);
    const [line] = lines();
    expect(line).toMatchObject({ level: 30, audit: true, ...event, msg: 'audit load' });
    expect(line).not.toHaveProperty('reason');
  });

  it('copies only the listed fields and scrubs credentials from reason', () => {
    const { logger, lines } = capture();
    const token = generateToken();
    const record = {
      event: 'auth_failure',
      tenant: null,
      outcome: 'error',
      reason: `unknown: Bearer ${token} / ${hashToken(token)} / eyJhbGciOi.eyJzdWIi.c2ln`,
      headers: { authorization: `Bearer ${token}` },
      token,
    } as AuditRecord;
    auditEvent(logger, record);
    const text = JSON.stringify(lines());
    expect(text).not.toContain(token);
    expect(text).not.toContain(hashToken(token).slice(7, 40));
    expect(text).not.toContain('eyJzdWIi');
    expect(lines()[0]).toMatchObject({
      audit: true,
      event: 'auth_failure',
      tenant: null,
      outcome: 'error',
      reason: 'unknown: Bearer [redacted] / sha256:[redacted] / [redacted jwt]',
    });
    expect(scrub('x'.repeat(2000))).toHaveLength(512);
  });
});

describe('lock file and atomic write', () => {
  it('breaks a lock left by a dead process, and times out on a live one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-lock-'));
    try {
      const path = join(dir, 't.json');
      writeFileSync(`${path}.lock`, `999999999@${hostname()}\n`); // no such pid
      expect(await withFileLock(path, async () => 'ran', { timeoutMs: 2000 })).toBe('ran');
      expect(existsSync(`${path}.lock`)).toBe(false);
      writeFileSync(`${path}.lock`, `${process.pid}@${hostname()}\n`); // alive: us
      await expect(withFileLock(path, async () => 'ran', { timeoutMs: 100 })).rejects.toThrow(/is locked by another 'warden tenants' command/);
      rmSync(`${path}.lock`);
      await writeFileAtomic(path, '{"tenants": []}\n');
      expect(readFileSync(path, 'utf8')).toBe('{"tenants": []}\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
