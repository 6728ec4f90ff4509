/**
 * The session a model instance runs on the event loop, for the runs placement.ts keeps there:
 * Warden's in-process engine (native-engine.ts) where it is available and passes every tensor type
 * of the model, else onnxruntime-node. Both compute on the calling thread; they differ in what a
 * run costs around ONNX Runtime's own work.
 */
import ort from 'onnxruntime-node';
import type { OrtEngineBinding } from '../../platform/addon.js';
import * as errors from './onnxruntime.errors.js';
import type { Tensor } from '../../contract/types.js';
import type { DataType } from '../../contract/datatypes.js';
import type { SessionWorkerInit } from './messages.js';
import { NativeSession } from './native-engine.js';
import type { ThreadCpuClock } from './placement.js';
import type { RunResult } from './session-worker.js';
import { fromOrtTensor, toOrtTensor } from './tensors.js';

/** An output a run must compute, with the datatype it must have. */
export interface WantedOutput {
  name: string;
  datatype: DataType;
}

/** One instance's inline session. */
export interface InlineSession {
  /** Which engine computes (tests, supervision). */
  readonly engine: 'warden' | 'onnxruntime-node';
  /**
   * Runs once on the event loop. `costUs` is the run's CPU time on this thread when `clock` is
   * given (a session with one intra-op thread), else undefined (the caller uses the wall clock).
   * @throws TritonError INTERNAL for ONNX Runtime's failure or an output it did not produce
   */
  run(inputs: readonly Tensor[], outputs: readonly WantedOutput[], clock?: ThreadCpuClock): Promise<RunResult>;
  /** Releases the session. */
  release(): Promise<unknown>;
  /** The engine's session external on the `warden` engine while open (the native data path runs it); else undefined. */
  engineSession(): object | undefined;
}

/**
 * Opens an inline session of `init.file`: on `engine` when given, else on onnxruntime-node.
 * @throws Error if the model does not load
 */
export async function openInlineSession(init: SessionWorkerInit, engine: OrtEngineBinding | undefined): Promise<InlineSession> {
  if (engine) {
    const s = await NativeSession.open(engine, init.file, init.options.intraOpNumThreads ?? 1, init.options.interOpNumThreads ?? 1);
    return new EngineInlineSession(s);
  }
  return new NodeInlineSession(await ort.InferenceSession.create(init.file, init.options));
}

class EngineInlineSession implements InlineSession {
  readonly engine = 'warden';

  constructor(private readonly session: NativeSession) {}

  async run(inputs: readonly Tensor[], outputs: readonly WantedOutput[], clock?: ThreadCpuClock): Promise<RunResult> {
    const cpuStartNs = clock?.() ?? 0;
    const computeStartNs = process.hrtime.bigint();
    const result = this.session.run(inputs, outputs);
    const computeEndNs = process.hrtime.bigint();
    return { outputs: result, computeStartNs, computeEndNs, costUs: clock ? (clock() - cpuStartNs) / 1000 : undefined };
  }

  release(): Promise<void> {
    return this.session.close();
  }

  engineSession(): object | undefined {
    return this.session.handle;
  }
}

class NodeInlineSession implements InlineSession {
  readonly engine = 'onnxruntime-node';

  constructor(private readonly session: ort.InferenceSession) {}

  async run(inputs: readonly Tensor[], outputs: readonly WantedOutput[], clock?: ThreadCpuClock): Promise<RunResult> {
    const feeds: Record<string, ort.Tensor> = {};
    for (const t of inputs) feeds[t.name] = toOrtTensor(t.datatype, t.shape, t.data);
    // onnxruntime-node computes inside a setImmediate; one queued just before it runs right before
    // it, so the time measured excludes the wait for the check phase (what the placement must see)
    let computeStartNs = process.hrtime.bigint();
    let cpuStartNs = clock?.() ?? 0;
    setImmediate(() => {
      computeStartNs = process.hrtime.bigint();
      if (clock) cpuStartNs = clock();
    });
    let results: ort.InferenceSession.ReturnType;
    try {
      results = await this.session.run(
        feeds,
        outputs.map((o) => o.name),
      );
    } catch (e) {
      throw errors.executeFailed((e as Error).message);
    }
    const computeEndNs = process.hrtime.bigint();
    const costUs = clock ? (clock() - cpuStartNs) / 1000 : undefined;
    return {
      costUs,
      outputs: outputs.map((o) => {
        const r = results[o.name];
        if (!r) throw errors.outputMissing(o.name);
        return fromOrtTensor(o.name, o.datatype, r as ort.Tensor);
      }),
      computeStartNs,
      computeEndNs,
    };
  }

  release(): Promise<void> {
    return this.session.release();
  }

  engineSession(): undefined {
    return undefined;
  }
}
