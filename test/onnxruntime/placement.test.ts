/** Where ONNX Runtime runs go (host/src/backends/onnxruntime/placement.ts). */
import { describe, expect, it } from 'vitest';
import { DEMOTE_AT_ONCE_FACTOR, RunPlacement } from '../../host/src/backends/onnxruntime/placement.js';

describe('RunPlacement', () => {
  it('starts on the worker, goes inline up to the largest size seen fast, never above it', () => {
    const p = new RunPlacement(100);
    expect(p.inline(64)).toBe(false);
    p.record(128, 20);
    expect(p.inline(64)).toBe(true);
    expect(p.inline(128)).toBe(true);
    expect(p.inline(129)).toBe(false);
  });

  it('a very slow run at or below the learnt size sends that size back to the worker at once', () => {
    const p = new RunPlacement(100);
    p.record(4096, 50);
    p.record(1024, DEMOTE_AT_ONCE_FACTOR * 100); // e.g. a data-dependent model
    expect(p.inline(1024)).toBe(false);
    expect(p.inline(1023)).toBe(true);
    p.record(8192, 50_000); // slow above the learnt size changes nothing
    expect(p.inline(1023)).toBe(true);
  });

  it('isolated slow runs (preemption on a busy machine) keep the size inline', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    for (let i = 0; i < 1000; i++) {
      p.record(128, i % 5 === 0 ? 900 : 14); // one run in five preempted for ~1 ms
      expect(p.inline(128)).toBe(true);
    }
  });

  it('two slow runs in a row, or a model slow on every other run, move the size to the worker', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    p.record(128, 400);
    expect(p.inline(128)).toBe(true);
    p.record(128, 400);
    expect(p.inline(128)).toBe(false);

    const q = new RunPlacement(100);
    q.record(128, 14);
    let moved = -1;
    for (let i = 0; i < 20 && moved < 0; i++) {
      q.record(128, i % 2 === 0 ? 2_000 : 14);
      if (!q.inline(128)) moved = i;
    }
    expect(moved).toBeGreaterThanOrEqual(0);
    expect(moved).toBeLessThanOrEqual(4);
  });

  it('a size sent back to the worker comes back inline after a fast run there', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    p.record(128, 10_000);
    expect(p.inline(128)).toBe(false);
    p.record(128, 14); // measured on the worker
    expect(p.inline(128)).toBe(true);
  });

  it('inlineMaxUs 0 keeps every run on the worker', () => {
    const p = new RunPlacement(0);
    p.record(16, 1);
    expect(p.inline(0)).toBe(false);
    expect(p.inline(16)).toBe(false);
  });
});
