/**
 * Custom metrics of Python models (spec §7.2 `pb_utils.MetricFamily` / `Metric`), shown on
 * `/metrics` in Prometheus text. Stubs send `family`, `metric`, `increment`, `set`, `observe`
 * messages; the values are kept here, summed over a model's instances. Names and labels are
 * checked against Prometheus' rules and bounded in number (a buggy model cannot grow memory
 * without end).
 */

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Most families, and series per family, the store keeps. */
export const MAX_FAMILIES = 256;
export const MAX_SERIES = 1024;

type Kind = 'counter' | 'gauge' | 'histogram';
interface Series {
  labels: Record<string, string>;
  value: number;
  buckets?: number[];
  counts?: number[];
  sum?: number;
  count?: number;
}
interface Family {
  help: string;
  kind: Kind;
  series: Map<string, Series>;
}

const escape = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelText = (l: Record<string, string>) =>
  Object.entries(l)
    .map(([k, v]) => `${k}="${escape(v)}"`)
    .join(',');

export class PythonMetrics {
  private readonly families = new Map<string, Family>();

  /**
   * Apply one metric message of a model's stub. Bad names, kinds or values are ignored (the
   * stub's own `pb_utils` checks them first).
   */
  apply(_model: string, m: Record<string, unknown>): void {
    const name = String(m.family ?? '');
    if (!NAME.test(name)) return;
    if (m.action === 'family') {
      const kind = m.kind as Kind;
      if (!['counter', 'gauge', 'histogram'].includes(kind)) return;
      if (!this.families.has(name) && this.families.size < MAX_FAMILIES)
        this.families.set(name, { help: String(m.description ?? '').slice(0, 1024), kind, series: new Map() });
      return;
    }
    const fam = this.families.get(name);
    if (!fam) return;
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries((m.labels ?? {}) as Record<string, unknown>)) if (LABEL.test(k)) labels[k] = String(v).slice(0, 256);
    const key = labelText(labels);
    let s = fam.series.get(key);
    if (!s) {
      if (fam.series.size >= MAX_SERIES) return;
      s = { labels, value: 0 };
      if (fam.kind === 'histogram') {
        const b = Array.isArray(m.buckets)
          ? (m.buckets as unknown[])
              .map(Number)
              .filter(Number.isFinite)
              .sort((a, b) => a - b)
              .slice(0, 64)
          : [];
        Object.assign(s, { buckets: b, counts: b.map(() => 0), sum: 0, count: 0 });
      }
      fam.series.set(key, s);
    }
    const v = Number(m.value);
    if (m.action === 'metric' || !Number.isFinite(v)) return;
    if (m.action === 'increment' && fam.kind !== 'histogram') s.value += v;
    else if (m.action === 'set' && fam.kind === 'gauge') s.value = v;
    else if (m.action === 'observe' && fam.kind === 'histogram') {
      s.sum! += v;
      s.count! += 1;
      s.buckets!.forEach((b, i) => v <= b && (s.counts![i]! += 1));
    }
  }

  /** Prometheus text of every family (for `ServerMetrics.addTextSource`). */
  text(): string {
    let out = '';
    for (const [name, f] of this.families) {
      out += `# HELP ${name} ${f.help.replace(/\n/g, ' ')}\n# TYPE ${name} ${f.kind}\n`;
      for (const s of f.series.values()) {
        const l = labelText(s.labels);
        if (f.kind !== 'histogram') {
          out += `${name}${l ? `{${l}}` : ''} ${s.value}\n`;
          continue;
        }
        s.buckets!.forEach((b, i) => (out += `${name}_bucket{${l ? `${l},` : ''}le="${b}"} ${s.counts![i]}\n`));
        out += `${name}_bucket{${l ? `${l},` : ''}le="+Inf"} ${s.count}\n${name}_sum${l ? `{${l}}` : ''} ${s.sum}\n${name}_count${l ? `{${l}}` : ''} ${s.count}\n`;
      }
    }
    return out;
  }
}
