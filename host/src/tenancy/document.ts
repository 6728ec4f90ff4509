/**
 * Edits of a tenants file that keep its format: YAML through the `yaml` package's document model
 * (comments and layout of untouched entries survive), JSON as plain data printed with two-space
 * indentation. Every edit is validated by the strict parser before it can be written.
 */
import { Document, isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { TenancyConfigError, type TenantsFileFormat } from './format.js';
import { parseTenantsText } from './parse.js';
import type { TenantConfig, TenantQuotas, TenantRole } from './types.js';

/** A new entry as the CLI writes it: only what was given (defaults stay implicit in the file). */
export interface TenantEntryInput {
  id: string;
  role: TenantRole;
  /** Stored hashes (`sha256:<hex>`). */
  tokens: string[];
  weight?: number;
  shared_models?: string[];
  allow_onnx?: boolean;
  quotas?: Partial<TenantQuotas>;
  /** Creation identity (see TenantConfig.uid). */
  uid?: string;
}

const NEW_YAML_HEADER =
  ' Warden tenants file: edit with `warden tenants add|rotate|remove|list --tenants <this file>`.\n Tokens are stored as sha256 hashes; the server reloads this file when it changes.';

/** A tenants file being edited. */
export class TenantsDocument {
  private constructor(
    readonly format: TenantsFileFormat,
    private readonly source: string,
    private yaml: Document | undefined,
    private json: { tenants: Record<string, unknown>[] } | undefined,
    private current: TenantConfig[],
  ) {}

  /**
   * Opens a file's text for editing; `undefined` text = the file does not exist yet (an empty
   * tenants list).
   * @throws TenancyConfigError when the existing text is not a valid tenants file.
   */
  static parse(text: string | undefined, format: TenantsFileFormat, source: string): TenantsDocument {
    if (text === undefined) {
      if (format === 'json') return new TenantsDocument(format, source, undefined, { tenants: [] }, []);
      const doc = new Document({ tenants: [] });
      doc.commentBefore = NEW_YAML_HEADER;
      return new TenantsDocument(format, source, doc, undefined, []);
    }
    const tenants = parseTenantsText(text, format, source);
    if (format === 'json') return new TenantsDocument(format, source, undefined, JSON.parse(text), tenants);
    return new TenantsDocument(format, source, parseDocument(text, { uniqueKeys: true }), undefined, tenants);
  }

  /** The tenants as the file now stands (validated). */
  tenants(): readonly TenantConfig[] {
    return this.current;
  }

  /** @throws TenancyConfigError when the id exists (case-insensitively) or the entry is invalid. */
  add(entry: TenantEntryInput): void {
    const clash = this.current.find((t) => t.id.toLowerCase() === entry.id.toLowerCase());
    if (clash) throw new TenancyConfigError(`tenant '${clash.id}' already exists in ${this.source}`);
    const plain = compact(entry);
    if (this.json) this.json.tenants.push(plain);
    else {
      const seq = this.yamlSeq();
      if (seq.items.length === 0) seq.flow = false;
      seq.add(this.yaml!.createNode(plain));
    }
    this.revalidate();
  }

  /** Replaces the tenant's token hashes. @throws TenancyConfigError when there is no such tenant. */
  setTokens(id: string, hashes: string[]): void {
    const i = this.indexOf(id);
    if (this.json) this.json.tenants[i]!.tokens = [...hashes];
    else (this.yamlSeq().items[i] as YAMLMap).set('tokens', this.yaml!.createNode([...hashes]));
    this.revalidate();
  }

  /** Removes the tenant. @throws TenancyConfigError when there is no such tenant. */
  remove(id: string): void {
    const i = this.indexOf(id);
    if (this.json) this.json.tenants.splice(i, 1);
    else this.yamlSeq().delete(i);
    this.revalidate();
  }

  /** The file's new text. */
  toString(): string {
    return this.json ? `${JSON.stringify(this.json, null, 2)}\n` : String(this.yaml);
  }

  /** Index of the tenant in the file's list (the list and the validated tenants share order). */
  private indexOf(id: string): number {
    const i = this.current.findIndex((t) => t.id === id);
    if (i < 0) throw new TenancyConfigError(`no tenant '${id}' in ${this.source}`);
    return i;
  }

  private yamlSeq(): YAMLSeq {
    const seq = this.yaml!.get('tenants', true);
    if (!isSeq(seq) || !seq.items.every((item) => isMap(item))) {
      throw new TenancyConfigError(`tenants file ${this.source}: 'tenants' is not a list of mappings`);
    }
    return seq;
  }

  private revalidate(): void {
    this.current = parseTenantsText(this.toString(), this.format, this.source);
  }
}

/** The entry without undefined fields or empty optional lists. */
function compact(e: TenantEntryInput): Record<string, unknown> {
  const out: Record<string, unknown> = { id: e.id, role: e.role, tokens: [...e.tokens] };
  if (e.weight !== undefined) out.weight = e.weight;
  if (e.shared_models?.length) out.shared_models = [...e.shared_models];
  if (e.allow_onnx) out.allow_onnx = true;
  if (e.quotas && Object.keys(e.quotas).length > 0) out.quotas = { ...e.quotas };
  if (e.uid !== undefined) out.uid = e.uid;
  return out;
}
