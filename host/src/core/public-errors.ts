/**
 * What error text may leave the server (EXAMPLES "an error catalogue kept honest"): never an
 * absolute host path. Errors are written for the operator's log with full paths where that helps;
 * before one reaches a client (HTTP body, index reason, stream event) the data plane rewrites
 * every path under a directory the server knows (repositories, upload store, caches, backend
 * directory, the OS temp dir, the installation, the home directory) to a name relative to it.
 */
import { homedir, tmpdir } from 'node:os';
import { resolve, sep } from 'node:path';
import { AccessError, TritonError, asTritonError } from './errors.js';

/** A directory whose absolute path must not be shown, and what stands for it in messages. */
export interface PathRoot {
  path: string;
  /** '' = drop the directory (paths inside a model repository become `<model>/...`). */
  label: string;
}

/**
 * Rewrites known absolute paths in messages. Roots are matched longest first, so a model
 * repository inside the temp dir becomes model-relative, not `<tmp>/...`.
 */
export class PathScrubber {
  private readonly roots: { prefix: string; label: string }[];

  /** `roots` plus the OS temp dir (`<tmp>`), the home dir (`~`) and the working directory (`.`). */
  constructor(roots: readonly PathRoot[]) {
    const all = [...roots, { path: tmpdir(), label: '<tmp>' }, { path: homedir(), label: '~' }, { path: process.cwd(), label: '.' }];
    const seen = new Set<string>();
    this.roots = [];
    for (const r of all) {
      const abs = resolve(r.path);
      if (abs === sep || seen.has(abs)) continue;
      seen.add(abs);
      this.roots.push({ prefix: abs, label: r.label });
    }
    this.roots.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** `message` with every known root replaced (`<root>/x` → `<label>/x`, or `x` for label ''). */
  scrub(message: string): string {
    let out = message;
    for (const { prefix, label } of this.roots) {
      if (!out.includes(prefix)) continue;
      out = out.split(prefix + sep).join(label === '' ? '' : label + sep);
      out = out.split(prefix).join(label === '' ? '.' : label);
    }
    return out;
  }

  /** The client-facing form of any thrown value: a TritonError with the same code and a scrubbed message. */
  publicError(e: unknown): TritonError {
    const t = asTritonError(e);
    const message = this.scrub(t.message);
    if (message === t.message) return t;
    return t instanceof AccessError ? new AccessError(t.httpStatus, message, t.retryAfterS) : new TritonError(t.code, message);
  }
}
