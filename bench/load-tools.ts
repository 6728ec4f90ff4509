/**
 * External load generators for bench/vs-triton.ts, driven as child processes so the client is
 * native code, not this event loop: wrk (HTTP/1.1 keep-alive, a Lua script sets the method,
 * headers and a body read from a file), h2load (gRPC as HTTP/2 POSTs of one prepared, framed
 * protobuf message; HTTP statuses only) and ghz (gRPC, real client, `-O json`). Missing tools are
 * reported, never installed (docs/benchmarks.md gives the apt and `go install` lines).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { parseGhz, parseH2load, parseWrk, type ToolResult } from './load-output.js';

/** An executable `name` on PATH or at one of `extra` (full paths), or undefined. */
export function findTool(name: string, extra: readonly string[] = []): string | undefined {
  const candidates = [...(process.env.PATH ?? '').split(delimiter).map((d) => join(d, name)), ...extra];
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      /* not this one */
    }
  }
  return undefined;
}

/** stdout of `cmd args`, killed after `timeoutMs`. @throws Error with stderr when it exits non-zero */
function run(cmd: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}\n${stdout}`.slice(0, 4000)));
      else resolve(stdout);
    });
  });
}

/** One HTTP request shape for wrk: body from `bodyFile`. */
export interface WrkRequest {
  url: string;
  headers: Record<string, string>;
  bodyFile: string;
}

/** Write the Lua script wrk runs for `req` next to its body; returns its path. */
export function wrkScript(req: WrkRequest): string {
  const path = `${req.bodyFile}.lua`;
  const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua one for these ASCII values
  writeFileSync(
    path,
    [
      'wrk.method = "POST"',
      ...Object.entries(req.headers).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`),
      `local f = assert(io.open(${lua(req.bodyFile)}, "rb"))`,
      'wrk.body = f:read("*a")',
      'f:close()',
      '',
    ].join('\n'),
  );
  return path;
}

/** wrk, one thread, `connections` keep-alive connections for `seconds`. */
export async function runWrk(wrk: string, req: WrkRequest, script: string, connections: number, seconds: number): Promise<ToolResult> {
  const out = await run(wrk, ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s', '-s', script, req.url], (seconds + 30) * 1000);
  return parseWrk(out);
}

/** h2load over one HTTP/2 connection with `streams` concurrent gRPC calls of the framed message in `bodyFile`. */
export async function runH2loadGrpc(h2load: string, address: string, bodyFile: string, streams: number, seconds: number): Promise<ToolResult> {
  const out = await run(
    h2load,
    [
      '-c1',
      `-m${streams}`,
      `-D${seconds}`,
      '-d',
      bodyFile,
      '-H',
      'content-type: application/grpc',
      '-H',
      'te: trailers',
      `http://${address}/inference.GRPCInferenceService/ModelInfer`,
    ],
    (seconds + 30) * 1000,
  );
  return parseH2load(out);
}

/** ghz over one connection with `concurrency` workers calling ModelInfer with `dataFile` (protojson) for `seconds`. */
export async function runGhz(ghz: string, protoset: string, address: string, dataFile: string, concurrency: number, seconds: number): Promise<ToolResult> {
  const out = await run(
    ghz,
    [
      '--insecure',
      '--protoset',
      protoset,
      '--call',
      'inference.GRPCInferenceService/ModelInfer',
      '-D',
      dataFile,
      '-c',
      String(concurrency),
      '--connections=1',
      '-z',
      `${seconds}s`,
      '-O',
      'json',
      address,
    ],
    (seconds + 30) * 1000,
  );
  return parseGhz(out);
}
