/** The error type of the OpenAI-compatible API's catalogue (openai.errors.ts). */
import { type ErrorCode, TritonError } from '../../contract/errors.js';

/** A TritonError with OpenAI's `param` and `code` (error-shape.ts writes them into the error object). */
export class OpenAIError extends TritonError {
  constructor(
    code: ErrorCode,
    message: string,
    /** The request field the error concerns (`param`), or null. */
    readonly param: string | null = null,
    /** OpenAI's machine-readable `code` (e.g. `model_not_found`), or null. */
    readonly openaiCode: string | null = null,
  ) {
    super(code, message);
  }
}
