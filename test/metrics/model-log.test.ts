/**
 * A model's log ring (metrics/model-log.ts): bounded in lines and in bytes (oldest dropped first,
 * counted), each line escaped and cut at the line bound without splitting a code point or an
 * escape, reads after a seq and of one version.
 */
import { describe, expect, it } from 'vitest';
import { escapeLogText, ModelLog } from '../../host/src/metrics/model-log.js';

const fixedClock = () => Date.UTC(2026, 0, 2, 3, 4, 5);

describe('model log ring', () => {
  it('keeps lines in order with seq, time, version, level and source', () => {
    const log = new ModelLog({ lines: 10, bytes: 1000, lineBytes: 100 }, fixedClock);
    log.forVersion(1).write('info', 'guest', 'a');
    log.forVersion(2).write('warn', 'stderr', 'b');
    const r = log.read();
    expect(r.lines).toEqual([
      { seq: 1, time: '2026-01-02T03:04:05.000Z', version: 1, level: 'info', source: 'guest', message: 'a' },
      { seq: 2, time: '2026-01-02T03:04:05.000Z', version: 2, level: 'warn', source: 'stderr', message: 'b' },
    ]);
    expect(r.next_seq).toBe(3);
    expect(log.read({ since: 1 }).lines.map((l) => l.message)).toEqual(['b']);
    expect(log.read({ version: 1 }).lines.map((l) => l.message)).toEqual(['a']);
  });

  it('drops the oldest lines beyond the line bound, and counts them', () => {
    const log = new ModelLog({ lines: 3, bytes: 1000, lineBytes: 100 });
    for (let i = 0; i < 200; i++) log.append(1, 'info', 'guest', `line ${i}`);
    const r = log.read();
    expect(r.lines.map((l) => l.message)).toEqual(['line 197', 'line 198', 'line 199']);
    expect(r.lines.map((l) => l.seq)).toEqual([198, 199, 200]);
    expect(r.dropped_lines).toBe(197);
    expect(r.dropped_bytes).toBe(Array.from({ length: 197 }, (_, i) => `line ${i}`.length).reduce((a, b) => a + b, 0));
    expect(log.size).toBe(3);
  });

  it('drops the oldest lines beyond the byte bound', () => {
    const log = new ModelLog({ lines: 100, bytes: 50, lineBytes: 20 });
    for (let i = 0; i < 10; i++) log.append(1, 'info', 'guest', String(i).repeat(20));
    const r = log.read();
    expect(r.lines.map((l) => l.message[0])).toEqual(['8', '9']);
    expect(log.keptBytes).toBe(40);
    expect(r.dropped_lines).toBe(8);
    expect(r.dropped_bytes).toBe(160);
  });

  it('escapes control, separator and bidi characters and the backslash, so a line cannot forge another', () => {
    expect(escapeLogText('a\nb\rc\td\\e\u001b[2J\u0007\u0085\u2028\u202e\u2066\ufeff\u007f')).toBe(
      'a\\nb\\rc\\td\\\\e\\u001b[2J\\u0007\\u0085\\u2028\\u202e\\u2066\\ufeff\\u007f',
    );
    const log = new ModelLog({ lines: 10, bytes: 1000, lineBytes: 200 });
    log.append(1, 'info', 'stdout', 'one\n[ERROR] forged\u001b[31m');
    log.append(1, 'info', 'guest', 'lone \ud800 surrogate, pair \ud83d\ude00 kept');
    const [forged, lone] = log.read().lines;
    expect(forged!.message).toBe('one\\n[ERROR] forged\\u001b[31m');
    expect(lone!.message).toBe('lone \\ud800 surrogate, pair \ud83d\ude00 kept');
    // eslint-disable-next-line no-control-regex
    for (const l of log.read().lines) expect(l.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
  });

  it('cuts a huge line at the line bound, never inside a code point or an escape, and says how much it cut', () => {
    const log = new ModelLog({ lines: 10, bytes: 10_000, lineBytes: 64 });
    const huge = 'y'.repeat(5_000_000) + 'Z';
    log.append(1, 'error', 'guest', huge);
    log.append(1, 'info', 'guest', 'é'.repeat(40)); // 2 bytes each: 32 fit
    log.append(1, 'info', 'guest', 'x'.repeat(63) + '\n' + 'tail'); // the escape needs 2 bytes, 1 is left
    const [big, accents, cut] = log.read().lines;
    expect(big!.message).toBe('y'.repeat(64));
    expect(big!.truncated_bytes).toBe(5_000_001 - 64);
    expect(accents!.message).toBe('é'.repeat(32));
    expect(accents!.truncated_bytes).toBe(16);
    expect(cut!.message).toBe('x'.repeat(63));
    expect(cut!.truncated_bytes).toBe(5);
    expect(log.read().lines.every((l) => Buffer.byteLength(l.message) <= 64)).toBe(true);
  });

  it('a line within the bound has no truncated_bytes', () => {
    const log = new ModelLog({ lines: 10, bytes: 1000, lineBytes: 8 });
    log.append(1, 'info', 'guest', '12345678');
    expect(log.read().lines[0]).not.toHaveProperty('truncated_bytes');
  });
});
