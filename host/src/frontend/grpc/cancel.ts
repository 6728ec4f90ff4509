/** The data plane's cancellation signal for a gRPC call: it aborts when the call is cancelled (the client cancelled or its deadline passed). */
import type { CancellationSignal } from '../../contract/types.js';
import { signalOn } from '../cancellation.js';

export function callSignal(call: { once(event: 'cancelled', listener: () => void): unknown }): CancellationSignal {
  return signalOn(call, 'cancelled');
}
