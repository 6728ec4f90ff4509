/**
 * OpenAI's error answer: `{"error": {"message", "type", "param", "code"}}` with OpenAI's status
 * codes (400 bad request, 401 bad API key, 403, 404 unknown model, 429 rate limit with
 * `Retry-After`, 500, 503), for every error of a `/v1/...` route: those its handlers throw, and
 * those the HTTP frontend's hooks raise before them (authentication, rate limits, restricted APIs).
 */
import type { Logger } from 'pino';
import { TritonError } from '../../contract/errors.js';
import { redactAbsolutePaths } from '../../contract/public-errors.js';
import { errorStatus, type HttpAnswer } from '../http/routing.js';
import { OpenAIError } from './openai-error.js';

/** Whether `url` (path and query) is one of the OpenAI-compatible API's. */
export function isOpenAIPath(url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');
}

/** OpenAI's error `type` for an HTTP status. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

/** OpenAI's `code` where the error itself names none. */
function defaultCode(e: TritonError, status: number): string | null {
  if (status === 401) return 'invalid_api_key';
  if (status === 429) return 'rate_limit_exceeded';
  if (e.code === 'NOT_FOUND') return 'model_not_found';
  return null;
}

/** The body of an OpenAI error object. */
export function openaiErrorBody(message: string, status: number, param: string | null = null, code: string | null = null): string {
  return JSON.stringify({ error: { message: redactAbsolutePaths(message), type: errorType(status), param, code } });
}

/**
 * The answer to a Triton error (in its public form) in OpenAI's shape, with `fields` (OpenAI's
 * `param` and `code`; by default the error's own, when it is an OpenAIError): AccessError by its kind (401 with
 * `WWW-Authenticate`, 403, 429 with `Retry-After`), any other by its code (spec §1.2's mapping:
 * INVALID_ARG 400, NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501, INTERNAL 500). The message's
 * absolute paths are redacted (contract/public-errors.ts).
 */
export function openaiTritonErrorAnswer(
  e: TritonError,
  fields: { param: string | null; openaiCode: string | null } | undefined = e instanceof OpenAIError ? e : undefined,
): HttpAnswer {
  const { status, headers } = errorStatus(e);
  const param = fields?.param ?? null;
  const code = fields?.openaiCode ?? defaultCode(e, status);
  return { status, headers, body: openaiErrorBody(e.message, status, param, code) };
}

/**
 * What a `/v1/...` route answers for anything thrown: a Triton error through `publicError` (host
 * paths scrubbed, an OpenAIError keeps its `param` and `code`); a framework 4xx with its message;
 * anything else is logged and answered as `publicError` makes it (500).
 */
export function openaiErrorAnswer(err: unknown, publicError: (e: unknown) => TritonError, logger: Pick<Logger, 'error'>): HttpAnswer {
  // The public form (host paths scrubbed); an OpenAIError keeps its `param` and `code`.
  if (err instanceof TritonError) return openaiTritonErrorAnswer(publicError(err), err instanceof OpenAIError ? err : undefined);
  const fe = err as { statusCode?: number; message?: string };
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, headers: { 'content-type': 'application/json' }, body: openaiErrorBody(fe.message ?? 'Bad Request', fe.statusCode) };
  }
  logger.error({ err }, 'unhandled error in OpenAI-compatible handler');
  return openaiTritonErrorAnswer(publicError(err));
}
