/**
 * The backend-host process (issue 12 point 2): loads one native model with the same classes (and
 * so the same addon and libtritonserver.so) as an in-process model, and serves the parent's
 * calls (protocol.ts). A crash here (SIGSEGV, abort) ends only this process; the parent fails the
 * in-flight requests, logs the signal and restarts it.
 */
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { TritonError } from '../../../core/errors.js';
import { NO_SERVER } from '../../../core/load-context.js';
import type { BackendModel, BackendModelInstance, ResponseSender } from '../../../core/types.js';
import { NativeBackend } from '../backend.js';
import { nativeAddon } from '../addon.js';
import type { FromChild, Loaded, ToChild, WireRequest } from './protocol.js';
import { ShmReader, ShmWriter, decodeTensors, encodeTensors, type TransportStats } from './shm-ring.js';

/** Rings with the parent: inputs come through `fromParent`, outputs go through `toParent`. */
let fromParent: ShmReader | undefined;
let toParent: ShmWriter | undefined;
const stats: TransportStats = { shmBytes: 0, inlineBytes: 0 };

function post(m: FromChild): void {
  if (m.t !== 'log') m.ack = fromParent?.consumed;
  process.send?.(m);
}

// Log lines go to the parent, which writes them into the model's log.
const logger = pino(
  { level: 'debug', base: undefined, timestamp: false },
  new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        const { level, msg, ...obj } = JSON.parse(line) as { level: number; msg: string };
        post({ t: 'log', level: level >= 50 ? 'error' : level >= 40 ? 'warn' : level >= 30 ? 'info' : 'debug', msg, obj });
      }
      cb();
    },
  }),
);

let backend: NativeBackend | undefined;
let model: BackendModel | undefined;
const instances = new Map<number, BackendModelInstance>();

function sender(token: number): ResponseSender {
  return {
    send: (response, final) => {
      const wire = response === null ? null : { outputs: encodeTensors(response.outputs, toParent, stats), parameters: response.parameters };
      post({ t: 'response', token, final, response: wire, shmEnd: toParent?.end });
    },
    sendError: (e: TritonError, final) => post({ t: 'response', token, final, error: { code: e.code, message: e.message } }),
  };
}

async function handle(m: ToChild): Promise<unknown> {
  switch (m.t) {
    case 'load': {
      const { backend: b, model: s, shm } = m.spec;
      if (shm) {
        const addon = nativeAddon();
        fromParent = new ShmReader(new Uint8Array(addon.shmOpen(shm.toChild, shm.bytes)));
        toParent = new ShmWriter(new Uint8Array(addon.shmOpen(shm.toParent, shm.bytes)));
      }
      backend = new NativeBackend(b.name, b.libraryPath, b.artifactsDir, b.configJson, logger, { executeTimeoutMs: 0, inBackendHostProcess: true });
      model = await backend.loadModel({
        key: { namespace: '', name: s.name },
        name: s.name,
        version: s.version,
        origin: { kind: 'repository', repository: dirname(s.modelPath) },
        server: NO_SERVER, // in-process inference is not offered to isolated models
        modelPath: s.modelPath,
        versionPath: s.versionPath,
        config: s.config,
        autoCompleteConfig: s.autoCompleteConfig,
        logger,
      });
      const loaded: Loaded = { config: model.config, parallelInstanceLoading: model.parallelInstanceLoading ?? false };
      return loaded;
    }
    case 'instance':
      if (!model) throw new TritonError('UNAVAILABLE', 'model not loaded');
      instances.set(m.id, await model.createInstance(m.spec));
      return undefined;
    case 'execute': {
      const inst = instances.get(m.instance);
      if (!inst) throw new TritonError('UNAVAILABLE', `no instance ${m.instance}`);
      toParent?.ack(m.ack);
      const requests = m.requests.map(({ token: _t, inputs, ...r }) => ({ ...r, inputs: decodeTensors(inputs, fromParent) }));
      fromParent?.done(m.shmEnd); // copied out: the parent may reuse those slots
      return await inst.execute(requests, m.requests.map((r: WireRequest) => sender(r.token)));
    }
    case 'finalizeInstance': {
      const inst = instances.get(m.id);
      instances.delete(m.id);
      await inst?.finalize();
      return undefined;
    }
    case 'finalizeModel':
      await model?.finalize();
      model = undefined;
      await backend?.finalize();
      backend = undefined;
      return undefined;
  }
}

process.on('message', (m: ToChild) => {
  handle(m).then(
    (value) => post({ t: 'reply', rid: m.rid, value }),
    (e) => {
      const err = e instanceof TritonError ? e : new TritonError('INTERNAL', e instanceof Error ? e.message : String(e));
      post({ t: 'reply', rid: m.rid, error: { code: err.code, message: err.message } });
    },
  );
});
// The parent went away: nothing left to serve.
process.on('disconnect', () => process.exit(0));
