/** InferenceRequest / Tensor builders for backend-level tests (tools/backend-request.ts, shared with the benches). */
export { request, tensor } from '../../tools/backend-request.js';
