/**
 * `--log-style` (cli-options.ts, log-output.ts): which style is in effect, and what a pretty line
 * looks like. `--log-format` keeps tritonserver's meaning (the timestamp format) beside it.
 */
import { describe, expect, it } from 'vitest';
import { parseCli } from '../../host/src/cli-options.js';
import { MODEL_TABLE_KEY } from '../../host/src/lifecycle/model-table.js';
import { effectiveLogStyle, prettyLines } from '../../host/src/log-output.js';

describe('--log-style', () => {
  it('parses auto (the default), pretty and json beside --log-format, and refuses anything else', () => {
    expect(parseCli(['--model-repository=/m']).logStyle).toBe('auto');
    const o = parseCli(['--model-repository=/m', '--log-style=json', '--log-format=ISO8601']);
    expect([o.logStyle, o.logSettings?.log_format]).toEqual(['json', 'ISO8601']);
    expect(parseCli(['--model-repository=/m', '--log-style=pretty']).logStyle).toBe('pretty');
    expect(() => parseCli(['--model-repository=/m', '--log-style=xml'])).toThrow(/--log-style must be auto, pretty or json, got 'xml'/);
  });

  it('auto is pretty only on a terminal without --log-file; pretty and json are as asked', () => {
    expect(effectiveLogStyle('auto', true, undefined)).toBe('pretty');
    expect(effectiveLogStyle(undefined, true, '')).toBe('pretty');
    expect(effectiveLogStyle('auto', false, undefined)).toBe('json');
    expect(effectiveLogStyle('auto', true, '/var/log/warden.log')).toBe('json');
    expect(effectiveLogStyle('pretty', false, '/var/log/warden.log')).toBe('pretty');
    expect(effectiveLogStyle('json', true, undefined)).toBe('json');
  });

  it('a pretty line: time, level, message, then the other fields; no pid, host, service or table rows', () => {
    const time = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const record = { level: 50, time, pid: 1, hostname: 'h', service: 'warden', model: 'm', reason: 'bad config', msg: "failed to load 'm': bad config" };
    const iso = prettyLines({ iso8601: true, colour: false })(JSON.stringify(record) + '\n');
    expect(iso).toBe(`[2026-01-02T03:04:05.678Z] ERROR: failed to load 'm': bad config {"model":"m","reason":"bad config"}\n`);
    const table = prettyLines({ iso8601: false, colour: false })(JSON.stringify({ level: 30, time, [MODEL_TABLE_KEY]: [{ model: 'm' }], msg: 'models\n+--+' }));
    expect(table).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: models\n\+--\+\n$/);
  });
});
