/**
 * Watches one file for changes: `fs.watch` on its directory (so an atomic rename over the file is
 * seen, which a watch on the file's old inode misses) plus a stat poll as a fallback for file systems
 * where `fs.watch` is silent (NFS, some container mounts). Events are debounced, and the callback
 * runs only when the file's bytes changed, one call at a time.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface FileWatchOptions {
  /** Quiet period after the last event before the file is read, ms (default 100). */
  debounceMs?: number;
  /** Stat poll interval, ms (default 2000; 0 disables polling). */
  pollIntervalMs?: number;
  /** Use `fs.watch` (default true); false leaves only the poll (tests of the fallback). */
  useFsWatch?: boolean;
  /** Called when the file cannot be read or the directory cannot be watched; once per distinct problem. */
  onError?: (err: NodeJS.ErrnoException) => void;
}

/** A running watch; `close()` stops it (idempotent). */
export interface FileWatch {
  close(): void;
  /** Checks the file now (what a watch event does after the debounce); resolves when done. */
  check(): Promise<void>;
}

/**
 * Calls `onContent(text)` whenever `path`'s content differs from the last content seen (the
 * first seen being `initialText`). Timers and watchers are unref'd: they keep no process alive.
 */
export function watchFileContent(
  path: string,
  initialText: string,
  onContent: (text: string) => void | Promise<void>,
  options: FileWatchOptions = {},
): FileWatch {
  const debounceMs = options.debounceMs ?? 100;
  const pollMs = options.pollIntervalMs ?? 2000;
  let lastDigest = digest(initialText);
  let lastStat = '';
  let lastProblem = '';
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  const report = (err: NodeJS.ErrnoException): void => {
    const key = err.code ?? err.message; // stat and read fail alike: report once
    if (key === lastProblem) return;
    lastProblem = key;
    options.onError?.(err);
  };

  const readOnce = async (): Promise<void> => {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      report(err as NodeJS.ErrnoException);
      return;
    }
    lastProblem = '';
    const d = digest(text);
    if (d === lastDigest || closed) return;
    lastDigest = d;
    await onContent(text);
  };

  const check = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await readOnce();
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  const schedule = (): void => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void check();
    }, debounceMs);
    timer.unref();
  };

  let watcher: FSWatcher | undefined;
  if (options.useFsWatch !== false) {
    try {
      // Any event in the directory triggers a (debounced, digest-compared) read rather than only
      // events naming the file: a Kubernetes ConfigMap mount swaps a `..data` symlink, and the
      // events name that, not the file.
      watcher = watch(dirname(path), { persistent: false }, () => schedule());
      watcher.on('error', (err) => {
        report(err as NodeJS.ErrnoException);
        watcher?.close();
        watcher = undefined;
      });
    } catch (err) {
      report(err as NodeJS.ErrnoException);
    }
  }

  let poll: NodeJS.Timeout | undefined;
  if (pollMs > 0) {
    poll = setInterval(() => {
      stat(path).then(
        (s) => {
          const sig = `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
          if (sig !== lastStat) {
            lastStat = sig;
            schedule();
          }
        },
        (err: NodeJS.ErrnoException) => report(err),
      );
    }, pollMs);
    poll.unref();
  }

  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (poll) clearInterval(poll);
      watcher?.close();
      watcher = undefined;
    },
    check,
  };
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
