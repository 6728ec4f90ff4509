/**
 * host/src/kit/strip-export.ts: removing componentize-py's `exports` instance export renumbers
 * every later top-level instance reference (instance arguments and inline exports, aliases,
 * exports), points references to the removed export's own index at the instance it exported, and
 * leaves a component without that export unchanged.
 */
import { describe, expect, it } from 'vitest';
import { componentSurface } from '../../host/src/backends/wasm/component-check.js';
import { stripComponentExport } from '../../host/src/kit/strip-export.js';

const jco = () => import('@bytecodealliance/jco');

const WAT = `(component
  (import "warden:backend/types@0.1.0" (instance (;0;)))
  (instance (;1;))
  (export (;2;) "exports" (instance 1))
  (instance (;3;) (export "x" (instance 2)) (export "y" (instance 1)))
  (alias export 3 "x" (instance (;4;)))
  (export (;5;) "warden:backend/backend@0.1.0" (instance 3)))`;

describe('stripComponentExport', () => {
  it('removes the export and renumbers what follows it', async () => {
    const { parse, print } = await jco();
    const out = stripComponentExport(await parse(WAT), 'exports');
    expect(componentSurface(out).exports.map((e) => e.name)).toEqual(['warden:backend/backend@0.1.0']);
    const text = (await print(out)).replace(/\s+/g, ' ');
    // instance 2 (the export of 1) is 1 again; 3 became 2
    expect(text).toContain('(instance (;2;) (export "x" (instance 1)) (export "y" (instance 1)) )');
    expect(text).toContain('(alias export 2 "x" (instance (;3;)))');
    expect(text).toContain('(export (;4;) "warden:backend/backend@0.1.0" (instance 2))');
    expect(text).not.toContain('"exports"');
  });

  it('leaves a component without the export as it is', async () => {
    const bin = await (await jco()).parse(WAT);
    const once = stripComponentExport(bin, 'exports');
    expect(stripComponentExport(once, 'exports')).toBe(once);
    expect(stripComponentExport(bin, 'nothing-by-this-name')).toBe(bin);
  });
});
