/** The data plane's cancellation signal for a gRPC call: it aborts when the call is cancelled (the client cancelled or its deadline passed). */
import type { CancellationSignal } from '../../contract/types.js';

export function callSignal(call: { once(event: 'cancelled', listener: () => void): unknown }): CancellationSignal {
  const listeners = new Set<() => void>();
  const signal: CancellationSignal = {
    aborted: false,
    addEventListener: (_t, l) => void listeners.add(l),
    removeEventListener: (_t, l) => void listeners.delete(l),
  };
  call.once('cancelled', () => {
    (signal as { aborted: boolean }).aborted = true;
    for (const l of [...listeners]) l();
    listeners.clear();
  });
  return signal;
}
