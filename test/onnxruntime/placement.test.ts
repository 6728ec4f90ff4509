/** Where ONNX Runtime runs go (host/src/backends/onnxruntime/placement.ts). */
import { describe, expect, it } from 'vitest';
import { RunPlacement } from '../../host/src/backends/onnxruntime/placement.js';

describe('RunPlacement', () => {
  it('starts on the worker, goes inline up to the largest size seen fast, never above it', () => {
    const p = new RunPlacement(100);
    expect(p.inline(64)).toBe(false);
    p.record(128, 20);
    expect(p.inline(64)).toBe(true);
    expect(p.inline(128)).toBe(true);
    expect(p.inline(129)).toBe(false);
  });

  it('a slow run at or below the learnt size sends that size back to the worker', () => {
    const p = new RunPlacement(100);
    p.record(4096, 50);
    p.record(1024, 5_000); // e.g. a data-dependent model, or a busy machine
    expect(p.inline(1024)).toBe(false);
    expect(p.inline(1023)).toBe(true);
    p.record(8192, 5_000); // slow above the learnt size changes nothing
    expect(p.inline(1023)).toBe(true);
  });

  it('inlineMaxUs 0 keeps every run on the worker', () => {
    const p = new RunPlacement(0);
    p.record(16, 1);
    expect(p.inline(0)).toBe(false);
    expect(p.inline(16)).toBe(false);
  });
});
