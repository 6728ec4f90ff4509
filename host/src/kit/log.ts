/**
 * `warden backend log [dir] --url U --token T [--model NAME] [--since SEQ]`: the model's own log
 * on a server (`GET /v2/models/<name>/log`, docs/tenant-guide.md "Your model's log"), what the
 * tenant's backend wrote there, one line per entry.
 */
import type { ModelLogRead } from '../contract/model-log.js';
import * as err from './kit.errors.js';
import { NAME_RE, type KitProject } from './project.js';
import { answerError, baseUrl } from './upload.js';

/** Options of {@link readModelLog}. */
export interface LogOptions {
  url: string;
  token?: string;
  /** Default: the project's name. */
  model?: string;
  /** Only lines after this seq (default 0: every kept line). */
  since?: number;
}

/**
 * Reads the model's log from the server.
 * @throws TritonError the server's error (an unknown model: NOT_FOUND), UNAVAILABLE when it cannot be reached
 */
export async function readModelLog(project: KitProject | undefined, opts: LogOptions): Promise<ModelLogRead & { model: string }> {
  const model = opts.model ?? project?.manifest.name;
  if (model === undefined || !NAME_RE.test(model)) throw err.nameInvalid(model ?? '');
  const url = `${baseUrl(opts.url)}/v2/models/${encodeURIComponent(model)}/log${opts.since ? `?since=${opts.since}` : ''}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {} });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw err.serverUnreachable(baseUrl(opts.url), cause ?? (e as Error).message);
  }
  const text = await res.text();
  if (!res.ok) throw answerError(res.status, text);
  return JSON.parse(text) as ModelLogRead & { model: string };
}

/** One entry as a line: `<seq> <time> v<version> <level> <source>: <message>` (+ how much was cut). */
export function logLineText(l: ModelLogRead['lines'][number]): string {
  const cut = l.truncated_bytes ? ` [${l.truncated_bytes} more bytes cut]` : '';
  return `${l.seq} ${l.time} v${l.version} ${l.level} ${l.source}: ${l.message}${cut}`;
}
