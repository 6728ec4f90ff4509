/**
 * The start-up table of models and states (lifecycle/model-table.ts), tritonserver's layout:
 * columns as wide as their widest cell, a failed version's reason in its Status, models never
 * loaded left out.
 */
import { describe, expect, it } from 'vitest';
import { modelTable } from '../../host/src/lifecycle/model-table.js';

describe('model table', () => {
  it("lays out tritonserver's Model | Version | Status table, a reason after UNAVAILABLE", () => {
    const { rows, text } = modelTable([
      { name: 'simple', version: '1', state: 'READY' },
      { name: 'listed_only' },
      { name: 'broken', version: '2', state: 'UNAVAILABLE', reason: 'no backend\n  named x' },
    ]);
    expect(rows).toEqual([
      { model: 'simple', version: '1', state: 'READY' },
      { model: 'broken', version: '2', state: 'UNAVAILABLE', reason: 'no backend named x' },
    ]);
    expect(text.split('\n')).toEqual([
      '+--------+---------+---------------------------------+',
      '| Model  | Version | Status                          |',
      '+--------+---------+---------------------------------+',
      '| simple | 1       | READY                           |',
      '| broken | 2       | UNAVAILABLE: no backend named x |',
      '+--------+---------+---------------------------------+',
    ]);
  });

  it('no models: the header alone', () => {
    expect(modelTable([]).text.split('\n')).toEqual([
      '+-------+---------+--------+',
      '| Model | Version | Status |',
      '+-------+---------+--------+',
      '+-------+---------+--------+',
    ]);
  });
});
