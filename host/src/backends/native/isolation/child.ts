/**
 * The backend-host process (issue 12): loads one native model with the same classes (and so the
 * same addon and libtritonserver.so) as an in-process model and answers the parent's control calls
 * (protocol.ts). Requests never pass through this file: the addon's IsoServer serves the rings
 * natively (ring.ts). A crash here (SIGSEGV, abort) ends only this process; the parent fails the
 * in-flight requests, logs the signal and restarts it.
 */
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { TritonError } from '../../../core/errors.js';
import { NO_SERVER } from '../../../core/load-context.js';
import type { BackendModel } from '../../../core/types.js';
import { NativeBackend } from '../backend.js';
import { nativeAddon, type IsoServer } from '../addon.js';
import { NativeModelInstance } from '../instance.js';
import type { NativeLeaks } from '../model.js';
import type { Finalized, FromChild, Loaded, ToChild } from './protocol.js';
import { DOORBELL_FD } from './host-process.js';

/** How long finalizeInstance waits for the backend to release what it holds. */
const RELEASE_WAIT_MS = 5_000;

function post(m: FromChild): void {
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
/** Kept for the life of the process: backend threads may answer late (decoupled). */
let server: IsoServer | undefined;
let leaks: NativeLeaks | undefined;
const instances = new Map<number, NativeModelInstance>();

async function handle(m: ToChild): Promise<unknown> {
  switch (m.t) {
    case 'load': {
      const { backend: b, model: s, shm } = m.spec;
      if (!shm) throw new TritonError('INTERNAL', 'no rings to serve');
      backend = new NativeBackend(b.name, b.libraryPath, b.artifactsDir, b.configJson, logger, {
        executeTimeoutMs: 0,
        inBackendHostProcess: true,
        onLeaks: (_m, _v, l) => (leaks = l),
      });
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
      const addon = nativeAddon();
      server = new addon.IsoServer(DOORBELL_FD, addon.shmOpen(shm.toChild, shm.bytes), addon.shmOpen(shm.toParent, shm.bytes));
      const loaded: Loaded = { config: model.config, parallelInstanceLoading: model.parallelInstanceLoading ?? false };
      return loaded;
    }
    case 'instance': {
      if (!model || !server) throw new TritonError('UNAVAILABLE', 'model not loaded');
      const inst = await model.createInstance(m.spec);
      if (!(inst instanceof NativeModelInstance)) throw new TritonError('INTERNAL', 'not a native instance');
      instances.set(m.id, inst);
      server.addInstance(m.id, inst.addonHandle);
      return undefined;
    }
    case 'finalizeInstance': {
      const inst = instances.get(m.id);
      instances.delete(m.id);
      if (!inst || !server) return undefined;
      // Let the backend release what it holds (bounded); what it keeps is counted as leaked.
      for (let waited = 0; server.outstanding(m.id) > 0 && waited < RELEASE_WAIT_MS; waited += 10) await sleep(10);
      inst.leakedRequests = server.removeInstance(m.id);
      await inst.finalize();
      return undefined;
    }
    case 'finalizeModel': {
      await model?.finalize();
      model = undefined;
      await backend?.finalize();
      backend = undefined;
      const finalized: Finalized = leaks;
      return finalized;
    }
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
