/**
 * The documents that comments cite are in the repository, and every citation resolves:
 * - `spec §N` / `spec §N.M` (also lists and ranges: `§1.7, §3.1`, `§5.3–§5.7`, `§5.3-5.5`) names a
 *   numbered heading of docs/spec/triton-protocol-and-backend-abi.md; `§N.M.k` names item `k.` of
 *   the numbered list in §N.M. Every `§` followed by a number in the scanned files is checked: they
 *   all cite the spec.
 * - `DESIGN "<heading>"` (or `DESIGN.md "<heading>"`) names a heading of docs/design.md, whole or
 *   without its parenthetical / ` — ` tail (`DESIGN "Sandbox rules"`).
 * - Nothing points outside the repository (the documents and example models used to live in a
 *   sibling `shared/` directory), and relative links in Markdown files lead to existing files.
 *
 * Scanned: host/, native/, wit/, sample-backends/, test/, bench/, scripts/, docs/ and README.md,
 * skipping build outputs and generated code (wit-types, the C bindings, generated guest types and
 * wit/deps are generated from wit/, whose comments are checked at the source).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SPEC = 'docs/spec/triton-protocol-and-backend-abi.md';
const DESIGN = 'docs/design.md';
/** This file: its examples are deliberately bad, so it is not scanned. */
const SELF = 'test/project/doc-references.test.ts';

const SCAN_ROOTS = ['host', 'native', 'wit', 'sample-backends', 'test', 'bench', 'scripts', 'docs', 'README.md'];
/** Directory names never scanned: dependencies and build outputs. */
const SKIP_NAMES = new Set(['node_modules', 'dist', 'build', '.venv', '__pycache__', '.cache']);
/** Generated code, regenerated from wit/ by scripts/build-wasm.mjs (and ignored or committed as is). */
const SKIP_PATHS = new Set(['host/src/backends/wasm/wit-types', 'sample-backends/wasm/c/gen', 'sample-backends/wasm/ts/generated', 'wit/deps']);
const EXTENSIONS = /\.(ts|mts|mjs|cjs|js|c|cc|cpp|h|hpp|wit|md|py|txt|pbtxt)$|(^|\/)CMakeLists\.txt$/;

function scannedFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    const abs = join(ROOT, rel);
    if (!existsSync(abs)) return;
    for (const d of readdirSync(abs, { withFileTypes: true })) {
      const child = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) {
        if (!SKIP_NAMES.has(d.name) && !SKIP_PATHS.has(child)) walk(child);
      } else if (d.isFile() && EXTENSIONS.test(child) && child !== SELF) out.push(child);
    }
  };
  for (const r of SCAN_ROOTS) {
    if (r.endsWith('.md')) {
      if (existsSync(join(ROOT, r))) out.push(r);
    } else walk(r);
  }
  return out.sort();
}

/** Section numbers of the spec: numbered headings, and `N.M.k` for item `k.` of a numbered list in §N.M. */
function specSections(text: string): Set<string> {
  const sections = new Set<string>();
  let current: string | undefined;
  for (const line of text.split('\n')) {
    const h = /^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s/.exec(line);
    if (h) {
      current = h[1]!;
      sections.add(current);
      continue;
    }
    if (/^#{1,6}\s/.test(line)) {
      current = undefined;
      continue;
    }
    const item = /^(\d+)\.\s/.exec(line);
    if (item && current) sections.add(`${current}.${item[1]}`);
  }
  return sections;
}

/** Citable names of the design notes' headings: whole, without a `(…)` tail, without a ` — …` tail. */
function designHeadings(text: string): Set<string> {
  const headings = new Set<string>();
  for (const line of text.split('\n')) {
    const h = /^#{2,6}\s+(.+?)\s*$/.exec(line);
    if (!h) continue;
    const full = h[1]!;
    headings.add(full);
    headings.add(full.replace(/\s*\(.*$/, ''));
    headings.add(full.replace(/\s+—\s.*$/, ''));
  }
  return headings;
}

interface Citation {
  line: number;
  /** What the text says, e.g. `§5.3–5.5` or `DESIGN "Sandbox rules"`. */
  text: string;
  kind: 'spec' | 'design';
  /** The section numbers (spec) or the heading (design) the citation needs. */
  targets: string[];
}

const lineAt = (text: string, index: number): number => text.slice(0, index).split('\n').length;

/** Every spec and design citation in `text`. */
function findCitations(text: string): Citation[] {
  const found: Citation[] = [];
  // §N.M, optionally a range whose end has no § of its own (`§5.3-5.5`, `§6.6–6.8`); a range
  // written `§5.3–§5.7` is two citations.
  const spec = /§(\d+(?:\.\d+)*)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?/g;
  for (const m of text.matchAll(spec)) {
    found.push({ line: lineAt(text, m.index), text: m[0], kind: 'spec', targets: m[2] ? [m[1]!, m[2]] : [m[1]!] });
  }
  // DESIGN "heading", the heading possibly wrapped over comment lines (` * `, `// `, `# `).
  for (const m of text.matchAll(/\bDESIGN(?:\.md)?\s*"([^"\n]*(?:\n[^"\n]*){0,2}?)"/g)) {
    const heading = m[1]!.replace(/\s*\n\s*(?:\*|\/\/+|#+|>)?\s*/g, ' ').trim();
    if (/^<[^>]*>$/.test(heading)) continue; // a placeholder in prose, e.g. the docs' own `DESIGN "<heading>"`
    found.push({ line: lineAt(text, m.index), text: `DESIGN "${heading}"`, kind: 'design', targets: [heading] });
  }
  return found;
}

/** The citations in `text` that do not resolve, as `line: citation — why`. */
function unresolved(text: string, sections: Set<string>, headings: Set<string>): string[] {
  const bad: string[] = [];
  for (const c of findCitations(text)) {
    const missing = c.targets.filter((t) => !(c.kind === 'spec' ? sections.has(t) : headings.has(t)));
    if (missing.length === 0) continue;
    const why = c.kind === 'spec' ? `no section ${missing.map((t) => `§${t}`).join(', ')} in ${SPEC}` : `no heading "${missing[0]}" in ${DESIGN}`;
    bad.push(`${c.line}: ${c.text} — ${why}`);
  }
  return bad;
}

/** Paths that lead outside the repository (where the documents and example models used to live). */
const OUTSIDE = [/\/work\//, /\.\.\/shared\b/, /\bshared\/(?:spec|models)\b/, /\bDESIGN\.md\b/];

describe('documents cited by the code', () => {
  const sections = specSections(readFileSync(join(ROOT, SPEC), 'utf8'));
  const headings = designHeadings(readFileSync(join(ROOT, DESIGN), 'utf8'));
  const files = scannedFiles();

  it('are in the repository and have the expected sections', () => {
    for (const s of ['1', '1.2', '3.1', '5.6', '6.7', '6.7.2', '8']) expect(sections, `${SPEC} §${s}`).toContain(s);
    for (const h of ['Backend kinds', 'Sandbox rules', 'One request, end to end', 'Multi-tenancy']) expect(headings, `${DESIGN} "${h}"`).toContain(h);
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('host/src/contract/model-config.ts');
    expect(files).toContain('wit/types.wit');
    expect(files).toContain('native/src/core/instance.cc');
    expect(files.some((f) => f.includes('/wit-types/') || f.includes('node_modules/'))).toBe(false);
  });

  it('the checker finds lists, ranges, numbered items, wrapped DESIGN headings, and bad references', () => {
    const text = [
      `/** Validation (spec §5.3–§5.7), JSON (spec §1.7, §3.1), ranges (§5.3-5.5), item (§6.7.2),`,
      ` * ensembles (spec §5.6 \`ensemble_scheduling\`), and DESIGN "Sandbox`,
      ' * rules". */',
      `// bad: spec §9.1, §1.99, §6.7.9, §5.3-5.77; DESIGN "No such heading"; DESIGN.md "Multi-tenancy"`,
    ].join('\n');
    expect(findCitations(text).map((c) => c.targets.join('..'))).toEqual([
      '5.3',
      '5.7',
      '1.7',
      '3.1',
      '5.3..5.5',
      '6.7.2',
      '5.6',
      '9.1',
      '1.99',
      '6.7.9',
      '5.3..5.77',
      'Sandbox rules',
      'No such heading',
      'Multi-tenancy',
    ]);
    expect(unresolved(text, sections, headings)).toEqual([
      `4: §9.1 — no section §9.1 in ${SPEC}`,
      `4: §1.99 — no section §1.99 in ${SPEC}`,
      `4: §6.7.9 — no section §6.7.9 in ${SPEC}`,
      `4: §5.3-5.77 — no section §5.77 in ${SPEC}`,
      `4: DESIGN "No such heading" — no heading "No such heading" in ${DESIGN}`,
    ]);
  });

  it('every spec and DESIGN citation resolves', () => {
    const bad: string[] = [];
    let count = 0;
    for (const f of files) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      count += findCitations(text).length;
      for (const b of unresolved(text, sections, headings)) bad.push(`${f}:${b}`);
    }
    expect(count, 'citations found').toBeGreaterThan(150);
    expect(
      bad,
      `citations that name no section of ${SPEC} (numbered headings; §N.M.k = item k. of the numbered ` +
        `list in §N.M) or no heading of ${DESIGN} (${[...headings]
          .filter((h) => !/[(—]/.test(h))
          .map((h) => `"${h}"`)
          .join(', ')}). ` +
        'Fix the citation (or the document, if a section moved):\n  ' +
        bad.join('\n  ') +
        '\n',
    ).toEqual([]);
  });

  it('nothing points outside the repository', () => {
    const bad: string[] = [];
    for (const f of files) {
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const m = OUTSIDE.find((re) => re.test(line));
          if (m) bad.push(`${f}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(
      bad,
      `paths outside the repository (the documents are in docs/, the example models in third_party/triton-examples/):\n  ${bad.join('\n  ')}\n`,
    ).toEqual([]);
  });

  it('relative links in Markdown files lead to existing files', () => {
    const bad: string[] = [];
    for (const f of files.filter((x) => x.endsWith('.md'))) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.replace(/#.*$/, '');
        if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const abs = join(ROOT, dirname(f), target);
        if (!existsSync(abs) || relative(ROOT, abs).startsWith(`..${sep}`)) bad.push(`${f}:${lineAt(text, m.index)}: ${m[1]}`);
      }
    }
    expect(bad, `broken relative links:\n  ${bad.join('\n  ')}\n`).toEqual([]);
  });
});
