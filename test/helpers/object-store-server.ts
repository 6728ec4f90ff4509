/**
 * What the object-store repository tests need of an emulated store, whichever it is (moto for
 * `s3://`, gcp-storage-emulator for `gs://`, Azurite for `as://`): buckets (containers) to fill
 * and change, and the emulator process started on a free port and stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { until } from './wait.js';

/** A running emulated object store; keys are object (blob) names. */
export interface BucketTestServer {
  /** Create `bucket` (a container, for Azure). */
  createBucket(bucket: string): Promise<void>;
  /** Upload every file under the local directory `dir` to `bucket` below `prefix/`. */
  putTree(bucket: string, prefix: string, dir: string): Promise<void>;
  put(bucket: string, key: string, body: string | Uint8Array): Promise<void>;
  remove(bucket: string, key: string): Promise<void>;
  stop(): Promise<void>;
}

/** {@link BucketTestServer.putTree} over a store's `put`. */
export function putTreeWith(put: BucketTestServer['put']): BucketTestServer['putTree'] {
  return async (bucket, prefix, dir) => {
    const walk = async (d: string, rel: string): Promise<void> => {
      for (const name of readdirSync(d)) {
        const p = join(d, name);
        if (statSync(p).isDirectory()) await walk(p, `${rel}${name}/`);
        else await put(bucket, `${prefix}/${rel}${name}`, readFileSync(p));
      }
    };
    await walk(dir, '');
  };
}

/** An emulator process, answering HTTP. */
export interface EmulatorProcess {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** SIGTERM, then wait for the exit. */
  stop(): Promise<void>;
}

/**
 * Start `command args` (which must listen on `port`, on 127.0.0.1) and wait until `probe` (a path
 * of the endpoint) answers any HTTP status. @throws Error with the process's last output when it exits first
 */
export async function startEmulator(what: string, command: string, args: readonly string[], port: number, probe = '/'): Promise<EmulatorProcess> {
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}):\n${log}`);
        return fetch(endpoint + probe).then(
          () => true,
          () => false,
        );
      },
      { within: 30_000, every: 100, what: `${what} answering` },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { endpoint, stop };
}
