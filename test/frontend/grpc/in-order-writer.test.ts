/** The gRPC stream's answer order (host/src/frontend/grpc/in-order.ts). */
import { describe, expect, it } from 'vitest';
import { InOrderWriter } from '../../../host/src/frontend/grpc/in-order.js';

describe('InOrderWriter', () => {
  it("writes each place's messages after every earlier place is done, whatever order they finish in", () => {
    const out: string[] = [];
    const w = new InOrderWriter();
    const [a, b, c, d] = [w.reserve(), w.reserve(), w.reserve(), w.reserve()];
    c.write(() => out.push('c1'));
    b.write(() => out.push('b1'));
    c.done();
    d.write(() => out.push('d1'));
    expect(out).toEqual([]); // a, the front, has not answered
    a.write(() => out.push('a1')); // the front writes at once
    expect(out).toEqual(['a1']);
    b.write(() => out.push('b2'));
    a.done();
    expect(out).toEqual(['a1', 'b1', 'b2']); // b is the front now; c waits for it
    b.done();
    b.done(); // idempotent
    expect(out).toEqual(['a1', 'b1', 'b2', 'c1', 'd1']); // c was done: d is the front and flushed
    d.write(() => out.push('d2'));
    d.done();
    const e = w.reserve();
    e.write(() => out.push('e1')); // nothing left ahead of it
    expect(out).toEqual(['a1', 'b1', 'b2', 'c1', 'd1', 'd2', 'e1']);
  });

  it('a place done without writing (a decoupled request) lets later places go on', () => {
    const out: string[] = [];
    const w = new InOrderWriter();
    const decoupled = w.reserve();
    const next = w.reserve();
    next.write(() => out.push('next'));
    expect(out).toEqual([]);
    decoupled.done();
    expect(out).toEqual(['next']);
  });
});
