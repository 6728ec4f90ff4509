/**
 * What error text may leave the server (docs/tenancy.md "What leaves the server"): never an
 * absolute host path. Errors are written for the operator's log with full paths where that helps;
 * before one reaches a client (HTTP body, index reason, stream event) the data plane rewrites
 * every path under a directory the server knows (repositories, upload store, caches, backend
 * directory, the OS temp dir, the installation, the home directory) to a name relative to it, and
 * {@link redactAbsolutePaths} removes any absolute path left, under whatever directory. The
 * frontends' error encoders (HTTP `tritonErrorAnswer` / `errorAnswer`, `/generate_stream`
 * events, gRPC `toServiceError` and stream `error_message`) call {@link redactAbsolutePaths}
 * themselves as their last step, so an error that skipped the data plane is redacted too.
 */
import { homedir, tmpdir } from 'node:os';
import { resolve, sep } from 'node:path';
import { AccessError, TritonError, asTritonError } from './errors.js';

/** Control characters (a hostile name may put one right before a path). */
const CONTROL = '\\u0000-\\u001f\\u007f';
/** A control character as JSON escapes it (`\\n`, `\\u0000`): messages show hostile names so. */
const ESCAPED_CONTROL = '\\\\(?:[bfnrtv0]|u00[0-9a-fA-F]{2})';
/** Characters that end a bare (unquoted) path in a message. */
const PATH_END = `\\s'"\`()\\[\\]{}<>,;:|${CONTROL}`;
/** A quoted absolute path of two or more components: the whole quoted text, spaces included. */
const QUOTED_PATH = /(['"`])\/(?!\/)[^'"`\n]*?\/[^'"`\n]*?\1/g;
/**
 * A bare absolute path of two or more components (`/a/b...`), starting a message or after a
 * space, control character (raw or JSON-escaped), quote, bracket, `=`, `,`, `;`, `:`, `|` or `\`. Not matched: one-component names (POSIX
 * shared-memory keys such as `/acme_region`), relative paths (`1/model.wasm`, `./x`,
 * `<uploads>/m`), URLs (`https://host/p`: the `//` and the host come first), MIME types.
 */
const BARE_PATH = new RegExp(`(^|[\\s'"\`(\\[{=,;:|\\\\${CONTROL}]|${ESCAPED_CONTROL})\\/(?!\\/)[^/${PATH_END}]+\\/[^${PATH_END}]*`, 'g');

/**
 * `text` with every absolute path replaced by `<path>`, under whatever directory it lies: the
 * last step of every error text that leaves the server (HTTP bodies, gRPC statuses and stream
 * messages, the repository index's reasons). Idempotent.
 */
export function redactAbsolutePaths(text: string): string {
  if (!text.includes('/')) return text;
  return text.replace(QUOTED_PATH, (_m, q: string) => `${q}<path>${q}`).replace(BARE_PATH, (_m, lead: string) => `${lead}<path>`);
}

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

  /**
   * `message` with every known root replaced (`<root>/x` → `<label>/x`, or `x` for label ''),
   * then every absolute path left redacted ({@link redactAbsolutePaths}).
   */
  scrub(message: string): string {
    let out = message;
    for (const { prefix, label } of this.roots) out = relabel(out, prefix, label);
    return redactAbsolutePaths(out);
  }

  /** The client-facing form of any thrown value: a TritonError with the same code and a scrubbed message. */
  publicError(e: unknown): TritonError {
    return withMessage(asTritonError(e), (m) => this.scrub(m));
  }
}

/** `text` with the directory `prefix` replaced by `label` (`<prefix>/x` → `<label>/x`, or `x` for label ''). */
function relabel(text: string, prefix: string, label: string): string {
  if (!text.includes(prefix)) return text;
  return text
    .split(prefix + sep)
    .join(label === '' ? '' : label + sep)
    .split(prefix)
    .join(label === '' ? '.' : label);
}

/** `t` with its message rewritten by `rewrite`: the same object when nothing changed, else the same code (and access kind). */
function withMessage(t: TritonError, rewrite: (message: string) => string): TritonError {
  const message = rewrite(t.message);
  if (message === t.message) return t;
  return t instanceof AccessError ? new AccessError(t.kind, message, t.retryAfterS) : new TritonError(t.code, message);
}

/**
 * `err` with the one directory `root.path` (as given, not resolved) named by `root.label`, and
 * nothing else changed: an uploaded model's load error names its directory in the upload store by
 * the model's name, as the uploader knows it. The data plane's {@link PathScrubber} still runs after.
 */
export function relabelledError(err: TritonError, root: PathRoot): TritonError {
  return withMessage(err, (m) => relabel(m, root.path, root.label));
}
