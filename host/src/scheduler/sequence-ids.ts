/**
 * The correlation ids a backend sees for tenants' sequences on an operator model in multi-tenant
 * mode (DESIGN "Multi-tenancy": tenant identity is part of every shared key). The sequence batcher
 * keys sequences by (tenant, client id), but a backend reads the id itself
 * (`TRITONBACKEND_RequestCorrelationId[String]`, the Python backend's `correlation_id()`, the wasm
 * request record, the CORRID control input of spec §5.6): one that keeps its own state by it would
 * mix tenant A's sequence 4242 with tenant B's. So a tenant's sequence reaches the backend under an
 * id of its own, unique among the model's live sequences for the sequence's whole life:
 *
 * - an integer client id (and a string id when the CORRID control is an integer type, which
 *   carries it as its decimal value) gets a server-assigned integer whose top bit of the CORRID
 *   width W is set: W = 32 for an INT32 / UINT32 CORRID (2^31 … 2^32−1), else 64
 *   (2^63 … 2^64−1); a string id stays a string (the decimal digits of that integer);
 * - any other string id becomes `@<tenant>/<client id>` (a tenant id has no `/`).
 *
 * The operator's own requests keep their raw id (Triton's behaviour); an operator id of a reserved
 * form (an integer, or a string of decimal digits, whose bit W−1 is set modulo 2^W; a string
 * starting with `@`) is refused, so no operator sequence can meet a tenant's in the backend.
 */
import type { DataType } from '../contract/datatypes.js';
import { sequenceIdReserved } from './scheduler.errors.js';

/** A correlation id as requests carry it (0 / '' = none). */
export type CorrelationId = number | bigint | string;

const DECIMAL_U64 = /^\d{1,20}$/;
const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** The integer value of `id` (a decimal string's value), or undefined for any other string. */
function integerValue(id: CorrelationId): bigint | undefined {
  if (typeof id !== 'string') return BigInt(id);
  if (!DECIMAL_U64.test(id)) return undefined;
  const v = BigInt(id);
  return v <= U64_MAX ? v : undefined;
}

/** Server-assigned backend ids of one sequence batcher (see the module comment). */
export class TenantSequenceIds {
  /** Bit W−1 of the CORRID width: the first reserved id. */
  private readonly base: bigint;
  /** 2^W. */
  private readonly span: bigint;
  /** Offset of the next assigned id from {@link base}. */
  private next = 0n;
  /** Assigned integer ids of live sequences. */
  private readonly live = new Set<bigint>();
  /** The CORRID control carries integers (a string id is sent as its decimal value). */
  private readonly integerCorrid: boolean;

  /**
   * @param corridType the CORRID control's datatype (undefined: no CORRID control).
   * @param model the model's name, for error texts.
   */
  constructor(
    corridType: DataType | undefined,
    private readonly model: string,
  ) {
    const width = corridType === 'INT32' || corridType === 'UINT32' ? 32n : 64n;
    this.span = 1n << width;
    this.base = 1n << (width - 1n);
    this.integerCorrid = corridType !== undefined && corridType !== 'BYTES';
  }

  /**
   * Refuse an operator (or admin) id of a reserved form.
   * @throws TritonError INVALID_ARG "sequence ID <id> for model '<m>' is reserved: ..." for an
   *   integer or decimal-digits id with bit W−1 set (modulo 2^W), or a string starting with `@`.
   */
  checkOperatorId(id: CorrelationId): void {
    const v = integerValue(id);
    if (v !== undefined ? v % this.span < this.base : !(id as string).startsWith('@')) return;
    const shown = typeof id === 'string' ? `'${id}'` : String(id);
    const range = this.span === 1n << 32n ? '2^31 to 2^32-1 (modulo 2^32, the width of its CORRID control)' : '2^63 to 2^64-1';
    throw sequenceIdReserved(shown, this.model, range);
  }

  /**
   * The id the backend sees for a new sequence of `tenant` with client id `id` (see the module
   * comment); release it with {@link release} when the sequence ends.
   * @param id a non-empty client id (a string id is expected to be valid for the CORRID control).
   */
  assign(tenant: string, id: CorrelationId): CorrelationId {
    if (typeof id === 'string' && !this.integerCorrid) return `@${tenant}/${id}`;
    const half = this.base;
    let off = this.next;
    // Every id in use is skipped; there are far fewer live sequences than ids (2^31 or 2^63).
    while (this.live.has(half + off)) off = (off + 1n) % half;
    this.next = (off + 1n) % half;
    const v = half + off;
    this.live.add(v);
    if (typeof id === 'string') return v.toString();
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }

  /** The sequence holding `backendId` (an id {@link assign} returned) ended: its integer may be reused. */
  release(backendId: CorrelationId): void {
    if (typeof backendId === 'string' && backendId.startsWith('@')) return;
    this.live.delete(BigInt(backendId));
  }

  /** Every sequence ended (the model version is torn down). */
  clear(): void {
    this.live.clear();
  }
}
