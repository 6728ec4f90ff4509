/**
 * The cost of one thread hop, measured before building front-end threads (frontend/http/threads/).
 *
 * A multi-threaded HTTP frontend would hand every request from the thread that parsed it to the
 * thread that owns the model instances and hand the response back: two hops per request. This
 * suite measures that round trip alone, for a ~300-byte request and a ~300-byte response (the
 * size of a `simple` JSON body and reply), between the main thread and one worker thread:
 *
 * - `postMessage`: a MessagePort each way (structured clone of a Uint8Array), what Node gives;
 * - `SAB ring`: a single-producer / single-consumer ring of fixed slots in a SharedArrayBuffer
 *   each way; the consumer drains every ready slot, then sleeps in `Atomics.waitAsync` (both
 *   threads keep an event loop, as an HTTP thread must); the producer calls `Atomics.notify` only
 *   when the consumer said it sleeps (a seq-cst flag, so a wake-up is never lost);
 * - `same thread`: the same echo called directly with the same copies, the baseline to subtract.
 *
 * Per case: round trips per second, process CPU µs per round trip (`process.cpuUsage()`, both
 * threads) and mean latency, with 1 round trip in flight (HTTP c=1) and 16 (c=16). Run with
 * `BENCH_ONLY=hop npm run bench`; BENCH_HOP_TRIPS (default 20000) round trips per case and round.
 */
import { Worker } from 'node:worker_threads';
import type { BenchContext } from './ctx.js';

/** Slots per ring and bytes per slot (4-byte length prefix + payload). */
const SLOTS = 256;
const SLOT_BYTES = 1024;
/** Bytes of the request and of the response (a `simple` JSON body is ~300, its reply 305). */
const REQUEST_BYTES = 300;
const RESPONSE_BYTES = 305;
/** Int32 control words: [0] produced count, [1] consumed count, [2] consumer sleeping (1) or not (0). */
const CTRL_WORDS = 4;

/**
 * Ring code shared by both threads, as source text so the worker (started with `eval`) and this
 * module use the very same functions.
 */
const RING_SOURCE = String.raw`
function ringOf(sab) {
  return { ctrl: new Int32Array(sab, 0, ${CTRL_WORDS}), data: new Uint8Array(sab, ${CTRL_WORDS * 4}), view: new DataView(sab, ${CTRL_WORDS * 4}), head: 0 };
}
function ringWrite(r, bytes) {
  const tail = Atomics.load(r.ctrl, 0);
  if (tail - Atomics.load(r.ctrl, 1) >= ${SLOTS}) throw new Error('ring full');
  const off = (tail % ${SLOTS}) * ${SLOT_BYTES};
  r.view.setUint32(off, bytes.length, true);
  r.data.set(bytes, off + 4);
  Atomics.store(r.ctrl, 0, tail + 1);
  if (Atomics.load(r.ctrl, 2) === 1) Atomics.notify(r.ctrl, 0);
}
async function ringConsume(r, onMessage) {
  for (;;) {
    let tail = Atomics.load(r.ctrl, 0);
    while (r.head !== tail) {
      for (; r.head !== tail; r.head++) {
        const off = (r.head % ${SLOTS}) * ${SLOT_BYTES};
        const len = r.view.getUint32(off, true);
        onMessage(r.data.slice(off + 4, off + 4 + len));
      }
      Atomics.store(r.ctrl, 1, r.head);
      tail = Atomics.load(r.ctrl, 0);
    }
    Atomics.store(r.ctrl, 2, 1);
    if (Atomics.load(r.ctrl, 0) === r.head) {
      const w = Atomics.waitAsync(r.ctrl, 0, r.head);
      if (w.async) await w.value;
    }
    Atomics.store(r.ctrl, 2, 0);
  }
}
`;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
${RING_SOURCE}
const reply = (m) => { const out = new Uint8Array(${RESPONSE_BYTES}); out.set(m.subarray(0, Math.min(m.length, out.length))); return out; };
if (workerData.mode === 'postMessage') {
  parentPort.on('message', (m) => parentPort.postMessage(reply(m)));
} else {
  const toWorker = ringOf(workerData.toWorker);
  const toMain = ringOf(workerData.toMain);
  ringConsume(toWorker, (m) => ringWrite(toMain, reply(m)));
  // a pending Atomics.waitAsync does not keep a thread's event loop alive; the port does
  parentPort.on('message', () => undefined);
  parentPort.postMessage('ready');
}
`;

type RingFns = {
  ringOf(sab: SharedArrayBuffer): unknown;
  ringWrite(r: unknown, bytes: Uint8Array): void;
  ringConsume(r: unknown, onMessage: (m: Uint8Array) => void): Promise<never>;
};
const ring = new Function(`${RING_SOURCE}; return { ringOf, ringWrite, ringConsume };`)() as RingFns;

/** One hop transport under test: `send` a request; `onReply` is called with each response. */
interface Transport {
  send(m: Uint8Array): void;
  close(): Promise<void>;
}

async function startTransport(mode: 'postMessage' | 'sab' | 'inline', onReply: (m: Uint8Array) => void): Promise<Transport> {
  if (mode === 'inline') {
    const reply = (m: Uint8Array) => {
      const out = new Uint8Array(RESPONSE_BYTES);
      out.set(m.subarray(0, Math.min(m.length, out.length)));
      return out;
    };
    // a copy in (as a slot or a clone would make) and the reply, on the next microtask
    return { send: (m) => queueMicrotask(() => onReply(reply(m.slice()))), close: async () => undefined };
  }
  if (mode === 'postMessage') {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { mode } });
    w.on('message', onReply);
    await new Promise((r) => w.once('online', r));
    return { send: (m) => w.postMessage(m), close: async () => void (await w.terminate()) };
  }
  const toWorker = new SharedArrayBuffer(CTRL_WORDS * 4 + SLOTS * SLOT_BYTES);
  const toMain = new SharedArrayBuffer(CTRL_WORDS * 4 + SLOTS * SLOT_BYTES);
  const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { mode, toWorker, toMain } });
  await new Promise((r) => w.once('message', r));
  const out = ring.ringOf(toWorker);
  void ring.ringConsume(ring.ringOf(toMain), onReply);
  return { send: (m) => ring.ringWrite(out, m), close: async () => void (await w.terminate()) };
}

interface HopResult {
  tripsPerS: number;
  cpuUsPerTrip: number;
  latencyUs: number;
}

/** `trips` round trips with `inflight` outstanding at a time, after a warm-up of 2,000. */
async function measure(mode: 'postMessage' | 'sab' | 'inline', inflight: number, trips: number): Promise<HopResult> {
  const request = new Uint8Array(REQUEST_BYTES).fill(7);
  let handler: (m: Uint8Array) => void = () => undefined;
  const t = await startTransport(mode, (m) => handler(m));
  const run = (n: number) =>
    new Promise<void>((resolve, reject) => {
      let sent = 0;
      let done = 0;
      handler = (m) => {
        if (m.length !== RESPONSE_BYTES || m[0] !== 7) return reject(new Error(`${mode}: bad reply`));
        if (++done === n) resolve();
        else if (sent < n) {
          sent++;
          t.send(request);
        }
      };
      for (; sent < Math.min(inflight, n); sent++) t.send(request);
    });
  try {
    await run(Math.min(2000, trips));
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await run(trips);
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
    const c = process.cpuUsage(cpu0);
    return { tripsPerS: (trips / wallUs) * 1e6, cpuUsPerTrip: (c.user + c.system) / trips, latencyUs: (wallUs / trips) * inflight };
  } finally {
    await t.close();
  }
}

/** Runs the hop suite; prints and records its table. */
export async function benchHop(ctx: BenchContext): Promise<void> {
  ctx.log('\n== Thread hop: one request/response round trip between two threads (issue 14 point 4) ==');
  const trips = Number(process.env.BENCH_HOP_TRIPS ?? 20000) || 20000;
  const modes = ['inline', 'postMessage', 'sab'] as const;
  const rows: string[][] = [];
  for (const inflight of [1, 16]) {
    const runs = new Map<string, HopResult[]>(modes.map((m) => [m, []]));
    for (let r = 0; r < ctx.rounds; r++) {
      for (const m of modes) runs.get(m)!.push(await measure(m, inflight, trips));
    }
    const base = ctx.median(runs.get('inline')!.map((x) => x.cpuUsPerTrip));
    for (const m of modes) {
      const rs = runs.get(m)!;
      const cpu = ctx.median(rs.map((x) => x.cpuUsPerTrip));
      rows.push([
        m === 'sab' ? 'SAB ring' : m === 'inline' ? 'same thread' : m,
        String(inflight),
        ctx.median(rs.map((x) => x.tripsPerS)).toFixed(0),
        cpu.toFixed(1),
        m === 'inline' ? '—' : (cpu - base).toFixed(1),
        ctx.median(rs.map((x) => x.latencyUs)).toFixed(1),
      ]);
      ctx.log(`  ${m} in flight ${inflight}: CPU µs/trip per round ${rs.map((x) => x.cpuUsPerTrip.toFixed(1)).join(' ')}`);
    }
  }
  const table = ctx.table(['transport', 'in flight', 'round trips/s', 'CPU µs / round trip', 'CPU µs over same thread', 'latency µs'], rows);
  ctx.log(table);
  ctx.section('Thread hop (request + response, ~300 bytes each way)', table);
}
