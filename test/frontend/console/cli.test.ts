/** The console's command-line flags (`--console`, `--console-path`; docs/console.md). */
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../../host/src/cli-options.js';

describe('--console', () => {
  it('is off by default; bare or =true turns it on at /console; --console-path moves it', () => {
    expect(parseCli(['--model-repository=/m'])).toMatchObject({ console: false, consolePath: '/console' });
    expect(parseCli(['--model-repository=/m', '--console'])).toMatchObject({ console: true, consolePath: '/console' });
    expect(parseCli(['--model-repository=/m', '--console=true', '--console-path=/ops'])).toMatchObject({ console: true, consolePath: '/ops' });
    expect(parseCli(['--model-repository=/m', '--console=false']).console).toBe(false);
  });

  it('refuses a path under the API or not a plain path', () => {
    expect(() => parseCli(['--model-repository=/m', '--console-path=/v2/ui'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/m', '--console-path=ui'])).toThrow(/--console-path/);
    expect(() => parseCli(['--model-repository=/m', '--console=maybe'])).toThrow(UsageError);
  });
});
