/**
 * Pieces every API group's description shares: references to the document's component schemas,
 * JSON bodies, Triton's error answer (spec §1.2) and the component schemas used by more than one
 * group.
 */
import type { JsonSchema, ResponseDoc } from './types.js';

/** A reference to the component schema `name` (document.ts#COMPONENTS). */
export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** An `application/json` body of `schema`. */
export const json = (schema: JsonSchema): Record<string, JsonSchema> => ({ 'application/json': schema });

/** A 200 answer with a JSON body. */
export const ok = (description: string, schema: JsonSchema): ResponseDoc => ({ description, content: json(schema) });

/** A 200 answer with an empty body. */
export const okEmpty = (description: string): ResponseDoc => ({ description });

/**
 * Triton's error answer (spec §1.2): `{"error": "<message>"}` with the status of its error code
 * (400 INVALID_ARG, 404 NOT_FOUND, 500 INTERNAL, 501 UNSUPPORTED, 503 UNAVAILABLE), and Warden's
 * access answers: 401 (multi-tenant mode, with `WWW-Authenticate`), 403 (`--http-restricted-api`,
 * a tenant's forbidden action), 413, 429 (a tenant's quota, with `Retry-After`).
 */
export const ERRORS: ResponseDoc = {
  description:
    'An error: `{"error": message}` with the status of its Triton error code (400, 404, 500, 501, 503), or an access answer ' +
    '(401 with `WWW-Authenticate` in multi-tenant mode, 403 for a restricted API group or a forbidden action, 429 with `Retry-After` over a quota).',
  content: json(ref('Error')),
  headers: { 'WWW-Authenticate': 'On a 401: `Bearer realm="warden"`.', 'Retry-After': 'On a 429: seconds before a retry may succeed.' },
};

/** An error answer with a fixed status (`description` says when). */
export const error = (description: string): ResponseDoc => ({ description, content: json(ref('Error')) });

/** Component schemas shared across groups. */
export const COMMON_SCHEMAS: Record<string, JsonSchema> = {
  Error: {
    type: 'object',
    description: "Triton's error body (spec §1.2).",
    required: ['error'],
    additionalProperties: false,
    properties: { error: { type: 'string' } },
  },
  Datatype: {
    type: 'string',
    description: 'A tensor datatype, as the protocol names it (spec §1.9).',
    enum: ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES', 'BF16'],
  },
  Shape: { type: 'array', items: { type: 'integer' }, description: 'Dimensions; -1 for a variable one (metadata only).' },
};
