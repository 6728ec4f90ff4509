/**
 * kill -9 during uploads: a real Warden process (fixtures/upload-server.ts) replaces a tenant
 * model's version content again and again (variants A and B: the identity component with a config parameter telling them apart, each upload
 * stamped with its sequence number) and is SIGKILLed at many moments — after each step of the
 * upload store's commit protocol in turn, and at random delays across the upload. After every
 * restart the model must serve exactly one complete upload: the last acknowledged one or the one in
 * flight, every file of it present and stamped alike, the served answers matching its variant; and
 * start-up must have left no staging directory, uncommitted generation or pointer temp file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, tempRepo, type TempRepo } from '../helpers/repo.js';
import { uploadFiles, variantOf } from './fixtures/models.js';
import { sleep } from '../helpers/wait.js';

const FIXTURE = join(PROJECT_ROOT, 'test/repository/fixtures/upload-server.ts');
const STEP_DELAY_MS = 3;
const BALLAST = 5;
const BALLAST_BYTES = 64 * 1024;
/** staging, each file (model.wasm, tag.txt, ballast), staged, renamed, pointer-staged, switched. */
const STEPS = 1 + (2 + BALLAST) + 4;
const RANDOM_KILLS = 13;

interface Event {
  event: 'ready' | 'step' | 'ack' | 'error';
  [k: string]: unknown;
}

/** A fixture process and its stdout events, in order. */
class Warden {
  readonly child: ChildProcess;
  private readonly events: Event[] = [];
  private waiters: (() => void)[] = [];
  readonly exited: Promise<void>;
  stderr = '';
  closed = false;

  constructor(repo: string) {
    this.child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, repo, String(STEP_DELAY_MS), String(BALLAST), String(BALLAST_BYTES)], {
      cwd: PROJECT_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stderr!.on('data', (d) => (this.stderr += String(d)));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.events.push(JSON.parse(line) as Event);
      for (const w of this.waiters.splice(0)) w();
    });
    // The process exited and its output was read to the end.
    this.exited = Promise.all([new Promise((r) => this.child.once('exit', r)), new Promise((r) => this.child.stdout!.once('close', r))]).then(() => undefined);
    this.child.stdin!.on('error', () => undefined); // EPIPE after a kill
    void this.exited.then(() => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** The next event satisfying `pred` (consumed with everything before it). */
  async next(pred: (e: Event) => boolean, what: string): Promise<Event> {
    for (;;) {
      const i = this.events.findIndex(pred);
      if (i >= 0) return this.events.splice(0, i + 1)[i]!;
      if (this.closed) throw new Error(`fixture exited before ${what}: ${this.stderr}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

const running: Warden[] = [];
const repos: TempRepo[] = [];
afterEach(async () => {
  for (const w of running.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) await w.kill();
  for (const r of repos.splice(0)) r.cleanup();
});

function start(repo: TempRepo): Warden {
  const w = new Warden(repo.path);
  running.push(w);
  return w;
}

/**
 * What the store holds after a start: exactly one generation besides CURRENT, no staging leftovers;
 * returns the sequence number of the stored upload after checking that every file is complete.
 */
function storedUpload(repo: TempRepo): number {
  const root = join(repo.path, '.warden-uploads');
  expect(readdirSync(join(root, '.staging'))).toEqual([]);
  const pointer = JSON.parse(readFileSync(join(root, 'acme/m/CURRENT'), 'utf8')) as {
    generation: number;
    config: { max_batch_size: number; parameters: Record<string, { string_value: string }> };
  };
  expect(readdirSync(join(root, 'acme/m')).sort()).toEqual(['CURRENT', `g${pointer.generation}`]);
  const dir = join(root, 'acme/m', `g${pointer.generation}`);
  const seq = Number(readFileSync(join(dir, '1/tag.txt'), 'utf8'));
  const expected = uploadFiles(seq, BALLAST, BALLAST_BYTES);
  const onDisk = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
  expect(onDisk).toEqual([...expected.keys()].sort());
  for (const [rel, data] of expected) expect(Buffer.compare(readFileSync(join(dir, rel)), Buffer.from(data)), `${rel} of upload ${seq}`).toBe(0);
  // The stored config is the one of the same upload.
  expect(pointer.config.parameters.variant.string_value).toBe(variantOf(seq));
  return seq;
}

describe('kill -9 during uploads', () => {
  it('after a restart the model serves the complete old or the complete new upload, never a mix', async () => {
    const repo = tempRepo(['simple']);
    repos.push(repo);
    // A first upload, acknowledged; then a kill while idle.
    let w = start(repo);
    await w.next((e) => e.event === 'ready', 'ready');
    const t0 = Date.now();
    w.send('upload 0');
    await w.next((e) => e.event === 'ack', 'ack 0');
    const uploadMs = Date.now() - t0;
    await w.kill();

    let acked = 0; // the last upload acknowledged (durable)
    let inFlight = 0; // the last upload started
    let nextSeq = 1;
    const outcomes = { old: 0, new: 0 };
    const killedAt: string[] = [];
    const rng = (() => {
      let x = 0x9e3779b9;
      return () => (x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32;
    })();

    for (let cycle = 0; cycle < STEPS + RANDOM_KILLS; cycle++) {
      w = start(repo);
      const ready = await w.next((e) => e.event === 'ready', `ready (cycle ${cycle})`);
      // Start-up served exactly one complete upload: the acknowledged one or the one in flight.
      const seq = storedUpload(repo);
      expect([acked, inFlight], `cycle ${cycle} after a kill at ${killedAt.at(-1)}`).toContain(seq);
      if (seq !== acked) outcomes.new++;
      else if (inFlight !== acked) outcomes.old++;
      expect(ready.index).toEqual([{ name: 'm', version: '1', state: 'READY' }]);
      expect(ready.served).toBe(variantOf(seq));
      acked = seq;

      inFlight = nextSeq++;
      w.send(cycle < STEPS ? `upload ${inFlight} ${cycle}` : `upload ${inFlight}`);
      if (cycle < STEPS) {
        // Kill right after step `cycle` of the commit protocol (the fixture holds there until killed).
        let step: Event | undefined;
        for (let n = 0; n <= cycle; n++) step = await w.next((e) => e.event === 'step', `step ${n}`);
        await w.kill();
        killedAt.push(`${step!.step as string}${step!.file ? ` ${step!.file as string}` : ''}`);
      } else {
        const delay = Math.floor(rng() * uploadMs * 1.2);
        await sleep(delay);
        await w.kill();
        killedAt.push(`${delay} ms`);
      }
      // An ack read before the kill makes the upload durable.
      if (
        await w
          .next((e) => e.event === 'ack', 'ack')
          .then(
            () => true,
            () => false,
          )
      )
        acked = inFlight;
    }
    w = start(repo);
    await w.next((e) => e.event === 'ready', 'ready (last)');
    expect([acked, inFlight]).toContain(storedUpload(repo));
    w.send('exit');
    await w.exited;
    // Both outcomes happened: kills before the pointer switch kept the old upload, after it the new.
    expect(outcomes.old).toBeGreaterThan(0);
    expect(outcomes.new).toBeGreaterThan(0);
    expect(killedAt.length).toBeGreaterThanOrEqual(20);
    // ~25 server start-ups: 45 s in CI, 91 s on a loaded 2-vCPU machine
  }, 300_000);
});
