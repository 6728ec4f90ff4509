/**
 * The backend-host process: loads one native model with the same classes (and so the
 * same addon and libtritonserver.so) as an in-process model and answers the parent's control calls
 * (protocol.ts). Requests never pass through this file: the addon's IsoServer serves the rings
 * natively (ring.ts). The backend's own in-process inference calls (BLS) are forwarded to Warden. A crash here (SIGSEGV, abort) ends only this process; the parent fails the
 * in-flight requests, logs the signal and restarts it.
 */
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { TritonError } from '../../../contract/errors.js';
import * as errors from '../native.errors.js';
import { NO_SERVER } from '../../../contract/load-context.js';
import type { BackendModel } from '../../../contract/types.js';
import { NativeBackend } from '../backend.js';
import { nativeAddon, type IsoServer } from '../../../platform/addon.js';
import { NativeModelInstance } from '../instance.js';
import type { NativeLeaks } from '../model.js';
import type { ServerCallHandler } from '../server-bridge.js';
import type { Finalized, FromChild, Loaded, ToChild, ToChildServer } from './protocol.js';
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

/** The hook kinds server.cc numbers (see server-bridge.ts): infer, cancel. */
const KIND_INFER = 0;
const KIND_CANCEL = 1;

/**
 * The backend's in-process inference (BLS) from this process: every call goes to Warden, which
 * runs it on its data plane with the isolated model's principal; answers and responses come back
 * as `serverResult` / `serverRespond` messages.
 */
class RemoteServerCalls implements ServerCallHandler {
  private nextCid = 1;
  private readonly waiting = new Map<number, { resolve: (v: string | undefined) => void; reject: (e: Error) => void }>();
  private readonly inflight = new Set<number>();

  get inflightRequests(): number {
    return this.inflight.size;
  }

  handle(kind: number, payload: unknown): Promise<string | undefined> {
    const cid = this.nextCid++;
    const token = kind === KIND_INFER ? (payload as { token: number }).token : undefined;
    if (token !== undefined) this.inflight.add(token);
    return new Promise<string | undefined>((resolve, reject) => {
      this.waiting.set(cid, { resolve, reject });
      post({ t: 'server', cid, kind, payload });
    }).catch((e: unknown) => {
      if (token !== undefined) this.inflight.delete(token); // refused: no responses will come
      throw e;
    });
  }

  cancel(token: number): void {
    if (this.inflight.has(token)) post({ t: 'server', cid: 0, kind: KIND_CANCEL, payload: { token } });
  }

  onMessage(m: ToChildServer): void {
    if (m.t === 'serverRespond') {
      if (m.final) this.inflight.delete(m.token);
      nativeAddon().serverRespond(m.token, m.response, m.final);
      return;
    }
    const w = this.waiting.get(m.cid);
    if (!w) return;
    this.waiting.delete(m.cid);
    if (m.error) w.reject(Object.assign(new Error(m.error.message), { tritonCode: m.error.tritonCode }));
    else w.resolve(m.value);
  }
}
const remoteCalls = new RemoteServerCalls();

let backend: NativeBackend | undefined;
let model: BackendModel | undefined;
/** Kept for the life of the process: backend threads may answer late (decoupled). */
let server: IsoServer | undefined;
/** The rings, mapped by the `rings` call (their names are gone from then on). */
let rings: { fromParent: ArrayBuffer; toParent: ArrayBuffer } | undefined;
let leaks: NativeLeaks | undefined;
const instances = new Map<number, NativeModelInstance>();

async function handle(m: ToChild): Promise<unknown> {
  switch (m.t) {
    case 'rings': {
      const addon = nativeAddon();
      const fromParent = addon.shmOpen(m.shm.toChild, m.shm.bytes);
      const toParent = addon.shmOpen(m.shm.toParent, m.shm.bytes);
      // Mapped: the names are no longer needed, whatever happens to either process from now on.
      addon.shmUnlink(m.shm.toChild);
      addon.shmUnlink(m.shm.toParent);
      rings = { fromParent, toParent };
      return undefined;
    }
    case 'load': {
      const { backend: b, model: s } = m.spec;
      if (!rings) throw errors.noRings();
      backend = new NativeBackend(b.name, b.libraryPath, b.artifactsDir, b.configJson, logger, {
        executeTimeoutMs: 0,
        inBackendHostProcess: true,
        onLeaks: (_m, _v, l) => (leaks = l),
        serverCalls: () => remoteCalls,
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
      server = new addon.IsoServer(DOORBELL_FD, rings.fromParent, rings.toParent);
      const loaded: Loaded = { config: model.config, parallelInstanceLoading: model.parallelInstanceLoading ?? false, readerTid: server.readerTid };
      return loaded;
    }
    case 'instance': {
      if (!model || !server) throw errors.hostModelNotLoaded();
      const inst = await model.createInstance(m.spec);
      if (!(inst instanceof NativeModelInstance)) throw errors.notNativeInstance();
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
    case 'checkReady': {
      const inst = instances.get(m.id);
      return inst ? inst.checkReady() : `instance ${m.id} is not loaded`;
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

process.on('message', (m: ToChild | ToChildServer) => {
  if (m.t === 'serverResult' || m.t === 'serverRespond') {
    remoteCalls.onMessage(m);
    return;
  }
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
