// The web console's checks and builders that need no page (docs/console.md): the upload form's
// validation before anything is sent, the model config it builds, an inference request template.
// Pure functions, so the browser test and the unit test (test/frontend/console/validate.test.ts)
// run the same code.

/** A model name the upload form accepts: the backend kit's rule (host/src/kit/project.ts NAME_RE). */
export const MODEL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Tensor datatypes the form offers (spec §1.9; BYTES as TYPE_STRING). */
export const DATATYPES = ['FP32', 'FP64', 'FP16', 'INT8', 'INT16', 'INT32', 'INT64', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'BOOL', 'BYTES'];

/**
 * The `warden:backend` WIT versions a component names in its imports and exports
 * (`warden:backend/<interface>@X.Y.Z`; wit/README.md "Compatibility"), found in its bytes.
 * @param {Uint8Array} bytes the component
 * @returns {string[]} the versions, sorted, without repeats
 */
export function witVersionsOf(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + 0x8000)));
  const found = new Set();
  for (const m of text.matchAll(/warden:backend\/[a-z0-9-]+@(\d+\.\d+\.\d+)/g)) found.add(m[1]);
  return [...found].sort();
}

/**
 * The WIT versions a server serves, from its metadata's extensions (`sandboxed_backend(warden:backend@X)`).
 * @param {string[]} extensions `GET /v2`'s `extensions`
 */
export function servedWitVersions(extensions) {
  const out = [];
  for (const e of extensions) {
    const m = /^sandboxed_backend\(warden:backend@(.+)\)$/.exec(e);
    if (m) out.push(m[1]);
  }
  return out;
}

/** Dims as the form writes them (`-1, 4`): a list of integers ≥ -1, or undefined when malformed. */
export function parseDims(text) {
  const parts = String(text)
    .split(',')
    .map((s) => s.trim());
  if (parts.length === 0 || parts.some((p) => !/^-?\d+$/.test(p))) return undefined;
  const dims = parts.map(Number);
  return dims.every((d) => d >= -1 && d !== 0) ? dims : undefined;
}

const int = (s) => (/^\d+$/.test(String(s).trim()) ? Number(s) : NaN);

/**
 * Check the upload form before sending. Sizes: the component's bytes against the tenant's
 * `max_upload_bytes` (decoded size of one load request's files). Limits: instances against
 * `max_instances_per_model`, `memory_limit_bytes` against `max_memory_per_instance_bytes`,
 * `execute_timeout_ms` against `max_execute_ms`, `log_limit_bytes` against `max_log_bytes`
 * (docs/tenancy.md). WIT: every version the component names must be one the server serves.
 * @param {object} form the form's values: name, fileBytes (Uint8Array|undefined), input/output ({name, datatype, dims}),
 *   maxBatchSize, instances, memoryLimitBytes, executeTimeoutMs, logLimitBytes (strings; empty = not set)
 * @param {{quotas?: Record<string, number>, served: string[]}} limits the tenant's quotas (absent: the operator) and served WIT versions
 * @returns {{field: string, message: string}[]} the problems; empty when the form may be sent
 */
export function validateUpload(form, limits) {
  const problems = [];
  const q = limits.quotas;
  const bad = (field, message) => problems.push({ field, message });
  if (!MODEL_NAME_RE.test(form.name)) bad('name', 'A model name is 1 to 64 letters, digits, _ . or -, starting with a letter or digit.');
  if (!form.fileBytes) bad('file', 'Choose the backend component (.wasm).');
  else {
    if (q && form.fileBytes.length > q.max_upload_bytes)
      bad('file', `The component is ${form.fileBytes.length} bytes; your upload limit is ${q.max_upload_bytes} bytes.`);
    const versions = witVersionsOf(form.fileBytes);
    if (versions.length === 0) bad('file', 'This file names no warden:backend WIT version: is it a component built with the backend kit?');
    for (const v of versions)
      if (!limits.served.includes(v))
        bad('file', `The component is built against warden:backend@${v}; this server serves ${limits.served.join(', ') || 'none'}.`);
  }
  for (const side of ['input', 'output']) {
    const t = form[side];
    if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(t.name)) bad(`${side}Name`, `The ${side} tensor needs a name (letters, digits, _ . -).`);
    if (!DATATYPES.includes(t.datatype)) bad(`${side}Datatype`, `Pick the ${side} datatype.`);
    if (!parseDims(t.dims)) bad(`${side}Dims`, `The ${side} dims are integers separated by commas, -1 for a variable one.`);
  }
  const bounded = (field, value, label, max, quota) => {
    if (String(value).trim() === '') return;
    const n = int(value);
    if (!Number.isSafeInteger(n)) bad(field, `${label} must be a whole number.`);
    else if (max !== undefined && n > max) bad(field, `${label} is ${n}; your limit (${quota}) is ${max}.`);
  };
  bounded('maxBatchSize', form.maxBatchSize, 'Max batch size', undefined, '');
  bounded('instances', form.instances, 'Instances', q?.max_instances_per_model, 'max_instances_per_model');
  if (String(form.instances).trim() !== '' && int(form.instances) < 1) bad('instances', 'Instances must be at least 1.');
  bounded('memoryLimitBytes', form.memoryLimitBytes, 'Memory limit', q?.max_memory_per_instance_bytes, 'max_memory_per_instance_bytes');
  bounded('executeTimeoutMs', form.executeTimeoutMs, 'Execute timeout', q?.max_execute_ms, 'max_execute_ms');
  bounded('logLimitBytes', form.logLimitBytes, 'Log limit', q?.max_log_bytes, 'max_log_bytes');
  return problems;
}

/** The model config (Triton's JSON form, as tritonclient's `load_model(config=...)` sends it) the valid `form` describes. */
export function buildConfig(form) {
  const type = (dt) => (dt === 'BYTES' ? 'TYPE_STRING' : `TYPE_${dt}`);
  const parameters = {};
  const param = (key, value) => {
    if (String(value).trim() !== '') parameters[key] = { string_value: String(Number(value)) };
  };
  param('memory_limit_bytes', form.memoryLimitBytes);
  param('execute_timeout_ms', form.executeTimeoutMs);
  param('log_limit_bytes', form.logLimitBytes);
  const config = {
    backend: 'wasm',
    max_batch_size: String(form.maxBatchSize).trim() === '' ? 0 : Number(form.maxBatchSize),
    input: [{ name: form.input.name, data_type: type(form.input.datatype), dims: parseDims(form.input.dims) }],
    output: [{ name: form.output.name, data_type: type(form.output.datatype), dims: parseDims(form.output.dims) }],
    instance_group: [{ kind: 'KIND_CPU', count: String(form.instances).trim() === '' ? 1 : Number(form.instances) }],
  };
  if (Object.keys(parameters).length > 0) config.parameters = parameters;
  return config;
}

/** Standard base64 of `bytes` (the load API's `file:` parameters). */
export function toBase64(bytes) {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + 0x8000)));
  return btoa(bin);
}

/**
 * An inference request for a model's metadata (spec §1.5): one element of zeros per input
 * (variable dims as 1), every output as JSON.
 */
export function requestTemplate(metadata) {
  const inputs = (metadata.inputs ?? []).map((t) => {
    const shape = t.shape.map((d) => (d < 0 ? 1 : d));
    const n = shape.reduce((a, b) => a * b, 1);
    const zero = t.datatype === 'BYTES' ? '' : t.datatype === 'BOOL' ? false : 0;
    return { name: t.name, datatype: t.datatype, shape, data: Array(n).fill(zero) };
  });
  return { inputs, outputs: (metadata.outputs ?? []).map((t) => ({ name: t.name })) };
}

/** Milliseconds of a statistics duration's mean (`{count, ns}`), or undefined with no count. */
export function meanMs(d) {
  return d && d.count > 0 ? d.ns / d.count / 1e6 : undefined;
}
