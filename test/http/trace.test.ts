/**
 * Trace extension (spec §3.5): settings endpoints with Triton's shape and errors, and the JSON
 * trace file with the request timestamps.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getJson, postJson, simpleRequest } from '../helpers/repo.js';
import { perTestServers } from '../helpers/servers.js';

const { repository, serve, defer } = perTestServers();

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'warden-trace-'));
  defer(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const infer = (url: string) => postJson(`${url}/v2/models/simple/infer`, simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));

describe('trace settings', () => {
  it('GET returns the defaults; trace is advertised', async () => {
    const s = await serve(repository(), { loadModels: ['simple'] });
    expect((await getJson(`${s.httpUrl}/v2`)).json.extensions).toContain('trace');
    const g = await getJson(`${s.httpUrl}/v2/trace/setting`);
    expect(g.status).toBe(200);
    expect(g.json).toEqual({ trace_level: ['OFF'], trace_rate: '1000', trace_count: '-1', log_frequency: '0', trace_file: '', trace_mode: 'triton' });
  });

  it('POST updates global and per-model settings; model overrides fall back to global; null clears', async () => {
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file: '/tmp/never-written.json' } });
    const u = s.httpUrl;
    let r = await postJson(`${u}/v2/models/simple/trace/setting`, { trace_rate: '5' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ trace_level: ['OFF'], trace_rate: '5', trace_count: '-1', trace_file: '/tmp/never-written.json' });
    r = await postJson(`${u}/v2/trace/setting`, { trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '2' });
    expect(r.json).toMatchObject({ trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '2' });
    // The model keeps its own rate and follows the global level.
    r = await getJson(`${u}/v2/models/simple/trace/setting`);
    expect(r.json).toMatchObject({ trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '5' });
    r = await postJson(`${u}/v2/models/simple/trace/setting`, { trace_rate: null });
    expect(r.json.trace_rate).toBe('2');
    r = await postJson(`${u}/v2/trace/setting`, { trace_level: ['OFF'] });
    expect(r.json.trace_level).toEqual(['OFF']);
  });

  it("answers Triton's errors", async () => {
    const s = await serve(repository(), { loadModels: ['simple'] });
    const u = s.httpUrl;
    const cases: [unknown, number, RegExp][] = [
      [{ trace_file: 'x.json' }, 501, /^trace file location can not be updated through network protocol$/],
      [{ trace_level: ['OFF', 'TIMESTAMPS'] }, 400, /^Expect only one trace level 'OFF' is specified$/],
      [{ trace_rate: 'abc' }, 400, /^Unable to parse 'trace_rate', got: abc$/],
      [{ trace_count: '-2' }, 400, /^Unable to parse 'trace_count'. Expecting value >= -1, got:-2$/],
      [{ log_frequency: '99999999999' }, 400, /^Unable to parse 'log_frequency', value is out of range \[ 0, 4294967295 \], got: 99999999999$/],
    ];
    for (const [body, status, msg] of cases) {
      const r = await postJson(`${u}/v2/trace/setting`, body);
      expect([r.status, r.json.error]).toEqual([status, expect.stringMatching(msg)]);
    }
    const unknown = await getJson(`${u}/v2/models/nope/trace/setting`);
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toBe('Request for unknown model : nope');
    expect((await fetch(`${u}/v2/trace/setting`, { method: 'PUT' })).status).toBe(405);
  });
});

describe('trace output', () => {
  it("writes sampled requests' timestamps to trace_file in Triton's JSON format at shutdown", async () => {
    const file = join(tempDir(), 'trace.json');
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file, level: ['TIMESTAMPS'], rate: 2, count: -1 } });
    for (let i = 0; i < 4; i++) expect((await infer(s.httpUrl)).status).toBe(200);
    await s.stop();
    const entries = JSON.parse(readFileSync(file, 'utf8')) as any[];
    // rate 2: every second request, two entries per trace
    expect(entries).toHaveLength(4);
    const heads = entries.filter((e) => e.model_name !== undefined);
    expect(heads).toEqual([
      { id: 1, model_name: 'simple', model_version: 1 },
      { id: 2, model_name: 'simple', model_version: 1 },
    ]);
    for (const t of entries.filter((e) => e.timestamps !== undefined)) {
      const names = t.timestamps.map((x: any) => x.name);
      expect(names).toEqual(['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END']);
      const ns = t.timestamps.map((x: any) => BigInt(x.ns));
      // start → queue → compute phases in order; the final response goes out after compute output started
      for (let i = 1; i < 6; i++) expect(ns[i] >= ns[i - 1]).toBe(true);
      expect(ns[6] >= ns[4]).toBe(true);
    }
  });

  it('honours trace_count and log_frequency (files trace_file.<n>)', async () => {
    const file = join(tempDir(), 't.json');
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file, level: ['TIMESTAMPS'], rate: 1, count: 3, logFrequency: 2 } });
    for (let i = 0; i < 5; i++) expect((await infer(s.httpUrl)).status).toBe(200);
    // Written as the second trace completes (a turn of the event loop after its response).
    for (let i = 0; i < 100 && !existsSync(`${file}.0`); i++) await new Promise((r) => setTimeout(r, 10));
    expect(JSON.parse(readFileSync(`${file}.0`, 'utf8'))).toHaveLength(4);
    expect((await getJson(`${s.httpUrl}/v2/trace/setting`)).json.trace_count).toBe('0');
    await s.stop();
    expect(JSON.parse(readFileSync(`${file}.1`, 'utf8'))).toHaveLength(2);
    expect(existsSync(`${file}.2`)).toBe(false);
  });

  it('traces nothing while the level is OFF', async () => {
    const file = join(tempDir(), 'off.json');
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file, rate: 1 } });
    expect((await infer(s.httpUrl)).status).toBe(200);
    await s.stop();
    expect(existsSync(file)).toBe(false);
  });
});
