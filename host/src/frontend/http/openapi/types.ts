/**
 * The shapes of the HTTP API's description (docs/architecture.md "The HTTP frontend"): each route's operations, declared
 * once per API group in this folder and attached to the route when it is registered
 * (routing.ts#route), from which document.ts builds the OpenAPI 3.1 document. They describe the
 * answers only: Fastify never validates or serialises with them (every answer's bytes are the
 * handlers' own, compared byte for byte with Triton's).
 */

/** The Fastify route config key that carries a route's {@link RouteDoc}. */
export const OPENAPI_CONFIG_KEY = 'openapi';

/** A JSON Schema (2020-12, OpenAPI 3.1's dialect); `$ref`s name `#/components/schemas/<Name>`. */
export type JsonSchema = Record<string, unknown>;

/** One answer of an operation: media type → schema of its body (none: an empty body). */
export interface ResponseDoc {
  description: string;
  content?: Record<string, JsonSchema>;
  /** Response headers worth naming: header name → description. */
  headers?: Record<string, string>;
}

/** One operation (a method of a route). */
export interface OperationDoc {
  summary: string;
  description?: string;
  /** Query parameters: name → [schema, description]. */
  query?: Record<string, [JsonSchema, string]>;
  /** The body the route reads: media type → schema; `required` when an empty body is refused. */
  requestBody?: { description?: string; required?: boolean; content: Record<string, JsonSchema> };
  /** Status code (or `default`) → answer. */
  responses: Record<string, ResponseDoc>;
}

/** The operations of a route, by method; a route answers 405 to every method it does not list. */
export interface RouteDoc {
  /** The API group (OpenAPI tag) the route belongs to. */
  tag: string;
  /** Served without credentials in multi-tenant mode (the health probes, the console's static files). */
  open?: boolean;
  GET?: OperationDoc;
  POST?: OperationDoc;
}
