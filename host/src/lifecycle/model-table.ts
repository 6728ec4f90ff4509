/**
 * The start-up summary of the models and their states, as tritonserver prints it after loading
 * (core server.cc, "Model | Version | Status"): one row per known version, a failed one's Status
 * being `UNAVAILABLE: <reason>`. Models the repositories list but nothing loaded (explicit mode)
 * are left out, as Triton leaves them out.
 */
import type { IndexEntry } from './repository-manager.js';

/** One row of the table: the model, its version, and its state (with the reason when it has one). */
export interface ModelTableRow {
  model: string;
  version: string;
  state: string;
  reason?: string;
}

/** The log record's key for the rows (JSON lines carry them; pretty lines show the table text instead). */
export const MODEL_TABLE_KEY = 'modelStates';

/**
 * The rows and the table text of `entries` (a repository index, {@link RepositoryManager.index}):
 *
 * ```
 * +--------+---------+--------+
 * | Model  | Version | Status |
 * +--------+---------+--------+
 * | simple | 1       | READY  |
 * +--------+---------+--------+
 * ```
 * A reason's line breaks become spaces (one row a line).
 */
export function modelTable(entries: readonly IndexEntry[]): { rows: ModelTableRow[]; text: string } {
  const rows: ModelTableRow[] = [];
  for (const e of entries) {
    if (e.state === undefined) continue;
    const row: ModelTableRow = { model: e.name, version: e.version ?? '-', state: e.state };
    if (e.reason) row.reason = e.reason.replace(/\s*[\r\n]+\s*/g, ' ');
    rows.push(row);
  }
  const cells = [['Model', 'Version', 'Status'], ...rows.map((r) => [r.model, r.version, r.reason ? `${r.state}: ${r.reason}` : r.state])];
  const widths = [0, 1, 2].map((i) => Math.max(...cells.map((c) => c[i]!.length)));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const line = (c: string[]) => `| ${c.map((text, i) => text.padEnd(widths[i]!)).join(' | ')} |`;
  const text = [rule, line(cells[0]!), rule, ...cells.slice(1).map(line), rule].join('\n');
  return { rows, text };
}
