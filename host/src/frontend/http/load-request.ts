/**
 * The body of a load request (spec §3.1: `POST /v2/repository/models/<m>/load` with
 * `parameters.config` and `file:<version>/<path>` base64 parameters, and Warden's
 * `file_sha256:<version>/<path>` digests), parsed into what the data
 * plane's `loadModel` takes. Pure and synchronous: the HTTP frontend runs it inline for a small
 * body and on a codec worker (codec/worker.ts) for one of `OFFLOAD_BYTES` (codec/pool.ts) or more, so that a
 * tenant's 15 MB upload costs other requests a buffer transfer, not a parse and a base64 decode
 * (DESIGN "Multi-tenancy": uploads are parsed off the event loop).
 */
import { decodeFileDigest, decodeFileOverride, FILE_DIGEST_PREFIX, parseConfigOverride } from '../../repository/overrides.js';
import { isJsonObject } from './body.js';
import { parseRequestJson } from './json-text.js';
import * as httpErrors from './http.errors.js';
import { loadParameterUnknown } from '../repository-request.errors.js';

/**
 * A load request's overrides: the config JSON as parsed, each file's relative path and bytes, and
 * each file named by digest (`file_sha256:`, Warden's extension): relative path and SHA-256 hex.
 */
export interface LoadRequestParts {
  configOverride: unknown;
  files: [string, Uint8Array][];
  digests: [string, string][];
}

/**
 * Parse a load request body (empty = no overrides).
 * @throws TritonError INVALID_ARG for JSON that does not parse, a body that is not an object,
 *   `parameters` or `config` of the wrong type, a config that is not JSON, a bad file path,
 *   base64 or digest; INTERNAL for an unknown parameter (Triton's wording for each)
 */
export function parseLoadRequest(model: string, body: Uint8Array): LoadRequestParts {
  const parts: LoadRequestParts = { configOverride: undefined, files: [], digests: [] };
  if (body.length === 0) return parts;
  const json = parseRequestJson(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  if (!isJsonObject(json)) throw httpErrors.loadNotObject();
  const params = json.parameters;
  if (params === undefined) return parts;
  if (!isJsonObject(params)) throw httpErrors.memberType('parameters', 'object');
  for (const [key, value] of Object.entries(params)) {
    if (key === 'config') {
      if (typeof value !== 'string') throw httpErrors.memberType('config', 'string');
      parts.configOverride = parseConfigOverride(model, value);
    } else if (key.startsWith('file:')) {
      parts.files.push(decodeFileOverride(key, value));
    } else if (key.startsWith(FILE_DIGEST_PREFIX)) {
      parts.digests.push(decodeFileDigest(key, value));
    } else {
      throw loadParameterUnknown(key);
    }
  }
  return parts;
}
