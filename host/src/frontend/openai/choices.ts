/**
 * One inference request per choice (`n`), submitted through the data plane's `infer` as
 * `/generate_stream` submits its one (frontend/http/generate.ts): every response of every choice
 * is decoded (io.ts ChoiceDecoder) and handed on with its choice's index, tensors released once
 * read. All choices share one cancellation signal: the client's disconnect (http/infer.ts
 * connectionSignal) or the first failure cancels every one still generating.
 */
import { TritonError, asTritonError } from '../../contract/errors.js';
import type { InferenceRequestInit, Principal, ResponseSender } from '../../contract/types.js';
import { releaseTensors } from '../../dataplane/inference.js';
import type { ServerApi } from '../../dataplane/server-api.js';
import type { ManualSignal } from '../cancellation.js';
import { ChoiceDecoder, type ResponseText } from './io.js';

/** What the choices of one request report, each call with the choice's index. */
export interface ChoiceEvents {
  /** A response's text (possibly empty) and the counts it carries. */
  text(index: number, r: ResponseText): void;
  /** The choice's final flag: it generates no more. */
  final(index: number): void;
  /** The choice failed (the error in its public form); no further event comes for it. */
  error(index: number, e: TritonError): void;
}

/**
 * Submit `inits` (one per choice) to model `name` version `version`.
 * @throws TritonError synchronously what the data plane's `infer` throws for a choice (the
 *   choices submitted before it are cancelled through `signal`): nothing is then streaming
 */
export function submitChoices(
  api: ServerApi,
  principal: Principal,
  name: string,
  version: number,
  inits: readonly InferenceRequestInit[],
  signal: ManualSignal,
  events: ChoiceEvents,
): void {
  inits.forEach((init, index) => {
    const decoder = new ChoiceDecoder();
    let done = false;
    const sender: ResponseSender = {
      send(r, final) {
        if (r) {
          try {
            if (!done) events.text(index, decoder.decode(r));
          } catch (e) {
            done = true;
            events.error(index, api.publicError(e));
          } finally {
            releaseTensors(r.outputs);
          }
        }
        if (final && !done) {
          done = true;
          const rest = decoder.flush();
          if (rest) events.text(index, { text: rest });
          events.final(index);
        }
      },
      sendError(e) {
        // The choice's first error ends it (later responses are dropped).
        if (done) return;
        done = true;
        events.error(index, api.publicError(e));
      },
    };
    try {
      api.infer(principal, name, version, init, sender, signal);
    } catch (e) {
      signal.abort();
      throw asTritonError(e);
    }
  });
}
