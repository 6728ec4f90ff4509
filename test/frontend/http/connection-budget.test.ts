/** `--http-max-connections` across listeners (host/src/frontend/http/connection-budget.ts). */
import { describe, expect, it } from 'vitest';
import { ConnectionBudget } from '../../../host/src/frontend/http/connection-budget.js';

describe('ConnectionBudget', () => {
  it('the cap holds for all slots together; a release or a reset makes room again', () => {
    const memory = ConnectionBudget.memory(2); // the main listener and two threads
    const main = new ConnectionBudget(memory, 4);
    const thread = new ConnectionBudget(memory, 4); // another thread's view of the same memory
    expect([main.admit(0), thread.admit(1), thread.admit(2), main.admit(0)]).toEqual([true, true, true, true]);
    expect(thread.admit(1)).toBe(false);
    expect(main.admit(0)).toBe(false);
    expect(main.open()).toBe(4); // a refusal takes nothing
    thread.release(2);
    expect(thread.admit(1)).toBe(true);
    expect(main.admit(2)).toBe(false);
    thread.reset(1); // thread 0 died with its two connections
    expect(main.open()).toBe(2);
    expect([main.admit(1), main.admit(2), main.admit(2)]).toEqual([true, true, false]);
  });
});
