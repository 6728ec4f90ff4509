// The Warden web console (docs/console.md): a client of the HTTP API only. The token the user
// types stays in this page's memory and goes out as `Authorization: Bearer` on every API call, so
// every read and write is the API's own tenancy check. Everything a model, a tenant or the server
// wrote (names, log lines, error texts) is rendered as text nodes by Preact, never as HTML.
import { h, render } from './vendor/preact.mjs';
import htm from './vendor/htm.mjs';
import { DATATYPES, buildConfig, meanMs, requestTemplate, servedWitVersions, toBase64, validateUpload } from './validate.js';

const html = htm.bind(h);
const root = document.getElementById('app');

/** An error answer of the API: its HTTP status and `{"error": ...}` text. */
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const EMPTY_UPLOAD = {
  name: '',
  fileBytes: undefined,
  fileName: '',
  input: { name: 'INPUT0', datatype: 'FP32', dims: '-1' },
  output: { name: 'OUTPUT0', datatype: 'FP32', dims: '-1' },
  maxBatchSize: '0',
  instances: '1',
  memoryLimitBytes: '',
  executeTimeoutMs: '',
  logLimitBytes: '',
};

let state = {
  token: '',
  signedIn: false,
  busy: false,
  error: '',
  notice: '',
  view: 'models',
  caller: undefined,
  singleUser: false,
  tenants: [],
  served: [],
  server: undefined,
  health: undefined,
  models: [],
  configs: {},
  stats: [],
  upload: EMPTY_UPLOAD,
  problems: [],
  inferModel: '',
  inferText: '',
  inferResult: '',
  logModel: '',
  log: undefined,
};

function update(patch) {
  state = { ...state, ...patch };
  render(html`<${App} s=${state} />`, root);
}

/** Call the API with the signed-in token. @returns the JSON answer (undefined for an empty body) @throws ApiError */
async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new ApiError(res.status, typeof json?.error === 'string' ? json.error : `HTTP ${res.status}`);
  return json;
}

const enc = encodeURIComponent;

/** Run `work`, showing its failure (the API's own error text) in the page's alert. */
async function attempt(work) {
  update({ busy: true, error: '', notice: '' });
  try {
    await work();
    update({ busy: false });
  } catch (e) {
    update({ busy: false, error: e instanceof ApiError ? `${e.message} (HTTP ${e.status})` : String(e.message ?? e) });
  }
}

async function signIn(token) {
  update({ token });
  await attempt(async () => {
    let who;
    try {
      who = await api('GET', '/v2/tenants');
    } catch (e) {
      // Single-user mode has no tenants route: everything is the operator's.
      if (!(e instanceof ApiError) || e.status !== 404) throw e;
      who = { caller: { id: '', role: 'admin' }, tenants: [] };
      update({ singleUser: true });
    }
    const server = await api('GET', '/v2');
    update({ signedIn: true, caller: who.caller, tenants: who.tenants, server, served: servedWitVersions(server.extensions ?? []) });
    await loadModels();
  });
}

function signOut() {
  state = { ...state, token: '', signedIn: false, caller: undefined, tenants: [], models: [], configs: {}, stats: [], log: undefined, inferResult: '' };
  update({ error: '', notice: '', upload: EMPTY_UPLOAD, problems: [], view: 'models' });
}

/** The caller's own tenant entry (quotas), or undefined for the operator. */
const me = (s) => s.tenants.find((t) => t.id === s.caller?.id && t.role === 'tenant');

async function loadModels() {
  const models = await api('POST', '/v2/repository/index', {});
  const configs = {};
  for (const m of models)
    if (m.state === 'READY' && !(m.name in configs)) {
      try {
        configs[m.name] = await api('GET', `/v2/models/${enc(m.name)}/config`);
      } catch {
        configs[m.name] = undefined;
      }
    }
  update({ models, configs });
}

async function loadStats() {
  const stats = await api('GET', '/v2/models/stats');
  update({ stats: stats.model_stats ?? [] });
}

async function loadOperator() {
  const [who, live, ready] = [await api('GET', '/v2/tenants').catch(() => ({ tenants: [] })), await probe('live'), await probe('ready')];
  await loadStats();
  update({ tenants: who.tenants, health: { live, ready } });
}

async function probe(which) {
  const res = await fetch(`/v2/health/${which}`);
  return res.status === 200;
}

function show(view) {
  update({ view, error: '', notice: '' });
  const load = { models: loadModels, stats: loadStats, operator: loadOperator }[view];
  if (load) void attempt(load);
  // Keyboard and screen-reader users land on the new view's heading.
  queueMicrotask(() => document.getElementById('view-heading')?.focus());
}

async function upload() {
  const u = state.upload;
  const problems = validateUpload(u, { quotas: me(state)?.quotas, served: state.served });
  update({ problems });
  if (problems.length > 0) {
    queueMicrotask(() => document.getElementById('upload-problems')?.focus());
    return;
  }
  await attempt(async () => {
    const body = { parameters: { config: JSON.stringify(buildConfig(u)), 'file:1/model.wasm': toBase64(u.fileBytes) } };
    await api('POST', `/v2/repository/models/${enc(u.name)}/load`, body);
    update({ notice: `Model ${u.name} is loaded.` });
    await loadModels();
  });
}

async function fillTemplate(model) {
  await attempt(async () => {
    const meta = await api('GET', `/v2/models/${enc(model)}`);
    update({ inferText: JSON.stringify(requestTemplate(meta), null, 2) });
  });
}

async function infer() {
  let request;
  try {
    request = JSON.parse(state.inferText);
  } catch (e) {
    update({ error: `The request is not JSON: ${e.message}` });
    return;
  }
  await attempt(async () => {
    const out = await api('POST', `/v2/models/${enc(state.inferModel)}/infer`, request);
    update({ inferResult: JSON.stringify(out, null, 2), notice: 'Inference done.' });
  });
}

async function readLog() {
  await attempt(async () => update({ log: await api('GET', `/v2/models/${enc(state.logModel)}/log`) }));
}

// ---- views ----

const fmtMs = (v) => (v === undefined ? '–' : v.toFixed(3));
/** `p50 / p90 / p99` in ms of one `latency_percentiles_us` entry (µs), or a dash before the first timed request. */
const fmtPercentiles = (p) => (p ? [p.p50, p.p90, p.p99].map((us) => fmtMs(us / 1000)).join(' / ') : '–');
const param = (config, key) => config?.parameters?.[key]?.string_value;

function SignIn({ s }) {
  const submit = (e) => {
    e.preventDefault();
    void signIn(e.currentTarget.elements.token.value);
  };
  return html`<main class="signin">
    <h1>Warden console</h1>
    <form onSubmit=${submit} aria-describedby="signin-help">
      <p id="signin-help">Sign in with your tenant token (an operator: an administrator's token; single-user servers: leave it empty).</p>
      <label for="token">Access token</label>
      <input id="token" name="token" type="password" autocomplete="off" />
      <button type="submit" disabled=${s.busy}>Sign in</button>
    </form>
    <${Messages} s=${s} />
  </main>`;
}

function Messages({ s }) {
  return html`<div>
    ${s.error && html`<p class="error" role="alert" id="error">${s.error}</p>`} ${s.notice && html`<p class="notice" role="status" id="notice">${s.notice}</p>`}
  </div>`;
}

function Nav({ s }) {
  const views = [
    ['models', 'Models'],
    ['upload', 'Upload'],
    ['infer', 'Test inference'],
    ['stats', 'Statistics'],
    ['logs', 'Logs'],
    ...(s.caller?.role === 'admin' ? [['operator', 'Operator']] : []),
  ];
  return html`<nav aria-label="Views">
    <ul>
      ${views.map(
        ([id, label]) =>
          html`<li key=${id}>
            <button type="button" id=${`nav-${id}`} aria-current=${s.view === id ? 'page' : undefined} onClick=${() => show(id)}>${label}</button>
          </li>`,
      )}
    </ul>
  </nav>`;
}

function Models({ s }) {
  return html`<section aria-labelledby="view-heading">
    <h2 id="view-heading" tabindex="-1">Your models</h2>
    <button type="button" onClick=${() => attempt(loadModels)}>Refresh</button>
    ${
      s.models.length === 0
        ? html`<p id="no-models">No models yet. Upload a sandboxed backend from the Upload view.</p>`
        : html`<table id="models">
            <caption class="visually-hidden">
              Models, their state, engine and limits
            </caption>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Version</th>
                <th scope="col">State</th>
                <th scope="col">Backend</th>
                <th scope="col">Engine</th>
                <th scope="col">Instances</th>
                <th scope="col">Limits</th>
                <th scope="col">Last error</th>
              </tr>
            </thead>
            <tbody>
              ${s.models.map((m) => {
                const c = s.configs[m.name];
                const limits = [
                  param(c, 'memory_limit_bytes') && `memory ${param(c, 'memory_limit_bytes')} B`,
                  param(c, 'execute_timeout_ms') && `execute ${param(c, 'execute_timeout_ms')} ms`,
                  param(c, 'log_limit_bytes') && `log ${param(c, 'log_limit_bytes')} B`,
                ].filter(Boolean);
                return html`<tr key=${`${m.name}/${m.version}`}>
                  <th scope="row">${m.name}</th>
                  <td>${m.version ?? '–'}</td>
                  <td>${m.state ?? 'not loaded'}</td>
                  <td>${c ? c.backend || c.platform : '–'}</td>
                  <td>${c ? (param(c, 'engine') ?? (c.backend === 'wasm' ? 'server default' : '–')) : '–'}</td>
                  <td>${c ? (c.instance_group ?? []).reduce((n, g) => n + Number(g.count ?? 1), 0) : '–'}</td>
                  <td>${c ? limits.join(', ') || 'server defaults' : '–'}</td>
                  <td class="reason">${m.reason ?? ''}</td>
                </tr>`;
              })}
            </tbody>
          </table>`
    }
  </section>`;
}

function Field({ id, label, value, onInput, type = 'text', help, problems, ...rest }) {
  const mine = problems.filter((p) => p.field === id);
  const described = [help && `${id}-help`, mine.length > 0 && `${id}-error`].filter(Boolean).join(' ') || undefined;
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input
      id=${id}
      type=${type}
      value=${value}
      onInput=${(e) => onInput(e.currentTarget.value)}
      aria-invalid=${mine.length > 0 ? 'true' : undefined}
      aria-describedby=${described}
      ...${rest}
    />
    ${help && html`<small id=${`${id}-help`}>${help}</small>`}
    ${mine.length > 0 && html`<small class="error" id=${`${id}-error`}>${mine.map((p) => p.message).join(' ')}</small>`}
  </div>`;
}

function Upload({ s }) {
  const u = s.upload;
  const set = (patch) => update({ upload: { ...state.upload, ...patch } });
  const setTensor = (side, patch) => set({ [side]: { ...state.upload[side], ...patch } });
  const q = me(s)?.quotas;
  const onFile = async (e) => {
    const file = e.currentTarget.files?.[0];
    set({ fileBytes: file ? new Uint8Array(await file.arrayBuffer()) : undefined, fileName: file?.name ?? '' });
  };
  const submit = (e) => {
    e.preventDefault();
    void upload();
  };
  const p = s.problems;
  const tensor = (side, label) =>
    html`<fieldset>
      <legend>${label} tensor</legend>
      <${Field} id=${`${side}Name`} label="Name" value=${u[side].name} onInput=${(v) => setTensor(side, { name: v })} problems=${p} />
      <div class="field">
        <label for=${`${side}Datatype`}>Datatype</label>
        <select id=${`${side}Datatype`} value=${u[side].datatype} onChange=${(e) => setTensor(side, { datatype: e.currentTarget.value })}>
          ${DATATYPES.map((d) => html`<option key=${d} value=${d}>${d}</option>`)}
        </select>
      </div>
      <${Field}
        id=${`${side}Dims`}
        label="Dims"
        value=${u[side].dims}
        onInput=${(v) => setTensor(side, { dims: v })}
        help="Comma-separated; -1 for a variable dim."
        problems=${p}
      />
    </fieldset>`;
  return html`<section aria-labelledby="view-heading">
    <h2 id="view-heading" tabindex="-1">Upload a sandboxed backend</h2>
    <p>
      The form is checked here before anything is sent: the component's size against your upload limit, the WIT version it was built against (this server serves
      ${s.served.join(', ') || 'none'}), and the limits against your quotas.
    </p>
    ${
      p.length > 0 &&
      html`<div id="upload-problems" class="error" role="alert" tabindex="-1">
        <p>Fix these before sending:</p>
        <ul>
          ${p.map((x) => html`<li key=${x.field + x.message}>${x.message}</li>`)}
        </ul>
      </div>`
    }
    <form onSubmit=${submit} novalidate>
      <${Field} id="name" label="Model name" value=${u.name} onInput=${(v) => set({ name: v })} problems=${p} autocomplete="off" />
      <div class="field">
        <label for="file">Backend component (.wasm)</label>
        <input
          id="file"
          type="file"
          accept=".wasm,application/wasm"
          onChange=${onFile}
          aria-describedby="file-help${p.some((x) => x.field === 'file') ? ' file-error' : ''}"
        />
        <small id="file-help"
          >${u.fileBytes ? `${u.fileName}: ${u.fileBytes.length} bytes.` : 'Built with `warden backend build`.'}${q ? ` Your limit: ${q.max_upload_bytes} bytes.` : ''}</small
        >
        ${
          p.some((x) => x.field === 'file') &&
          html`<small class="error" id="file-error"
            >${p
              .filter((x) => x.field === 'file')
              .map((x) => x.message)
              .join(' ')}</small
          >`
        }
      </div>
      ${tensor('input', 'Input')} ${tensor('output', 'Output')}
      <fieldset>
        <legend>Batching and limits</legend>
        <${Field}
          id="maxBatchSize"
          label="Max batch size"
          value=${u.maxBatchSize}
          onInput=${(v) => set({ maxBatchSize: v })}
          inputmode="numeric"
          problems=${p}
          help="0: no batching."
        />
        <${Field}
          id="instances"
          label="Instances"
          value=${u.instances}
          onInput=${(v) => set({ instances: v })}
          inputmode="numeric"
          problems=${p}
          help=${q ? `At most ${q.max_instances_per_model}.` : undefined}
        />
        <${Field}
          id="memoryLimitBytes"
          label="Memory limit per instance (bytes)"
          value=${u.memoryLimitBytes}
          onInput=${(v) => set({ memoryLimitBytes: v })}
          inputmode="numeric"
          problems=${p}
          help=${q ? `Empty: the server's default; at most ${q.max_memory_per_instance_bytes}.` : "Empty: the server's default."}
        />
        <${Field}
          id="executeTimeoutMs"
          label="Execute timeout (ms)"
          value=${u.executeTimeoutMs}
          onInput=${(v) => set({ executeTimeoutMs: v })}
          inputmode="numeric"
          problems=${p}
          help=${q ? `Empty: the server's default; at most ${q.max_execute_ms}.` : "Empty: the server's default."}
        />
        <${Field}
          id="logLimitBytes"
          label="Log limit per execute (bytes)"
          value=${u.logLimitBytes}
          onInput=${(v) => set({ logLimitBytes: v })}
          inputmode="numeric"
          problems=${p}
          help=${q ? `Empty: the server's default; at most ${q.max_log_bytes}.` : "Empty: the server's default."}
        />
      </fieldset>
      <button type="submit" id="upload-submit" disabled=${s.busy}>Check and upload</button>
    </form>
  </section>`;
}

/** Names of the models that may be chosen (ready ones first, each once). */
const modelNames = (s, readyOnly) => [...new Set(s.models.filter((m) => !readyOnly || m.state === 'READY').map((m) => m.name))];

function ModelSelect({ id, label, value, names, onChange }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      <option value="">Choose a model</option>
      ${names.map((n) => html`<option key=${n} value=${n}>${n}</option>`)}
    </select>
  </div>`;
}

function Infer({ s }) {
  const submit = (e) => {
    e.preventDefault();
    void infer();
  };
  return html`<section aria-labelledby="view-heading">
    <h2 id="view-heading" tabindex="-1">Test inference</h2>
    <form onSubmit=${submit}>
      <${ModelSelect}
        id="infer-model"
        label="Model"
        value=${s.inferModel}
        names=${modelNames(s, true)}
        onChange=${(v) => {
          update({ inferModel: v, inferResult: '' });
          if (v) void fillTemplate(v);
        }}
      />
      <div class="field">
        <label for="infer-request">Request (JSON)</label>
        <textarea
          id="infer-request"
          rows="10"
          spellcheck="false"
          value=${s.inferText}
          onInput=${(e) => update({ inferText: e.currentTarget.value })}
        ></textarea>
      </div>
      <button type="submit" id="infer-submit" disabled=${s.busy || !s.inferModel}>Run inference</button>
    </form>
    ${
      s.inferResult &&
      html`<h3 id="infer-result-heading">Response</h3>
        <pre id="infer-result" aria-labelledby="infer-result-heading" tabindex="0">${s.inferResult}</pre>`
    }
  </section>`;
}

function StatsTable({ stats, withTenant }) {
  if (stats.length === 0) return html`<p>No serving models.</p>`;
  return html`<table id="stats">
    <caption class="visually-hidden">
      Requests, latency and queue time per model version
    </caption>
    <thead>
      <tr>
        ${withTenant && html`<th scope="col">Tenant</th>`}
        <th scope="col">Model</th>
        <th scope="col">Version</th>
        <th scope="col">Requests</th>
        <th scope="col">Succeeded</th>
        <th scope="col">Failed</th>
        <th scope="col">Mean latency (ms)</th>
        <th scope="col">Latency p50 / p90 / p99 (ms)</th>
        <th scope="col">Mean queue time (ms)</th>
        <th scope="col">Queue time p50 / p90 / p99 (ms)</th>
        <th scope="col">Mean compute (ms)</th>
        <th scope="col">Pending</th>
      </tr>
    </thead>
    <tbody>
      ${stats.map((m) => {
        const st = m.inference_stats ?? {};
        return html`<tr key=${`${m.tenant ?? ''}/${m.name}/${m.version}`} data-model=${m.name}>
          ${withTenant && html`<td>${m.tenant === '' ? '(operator)' : m.tenant}</td>`}
          <th scope="row">${m.name}</th>
          <td>${m.version}</td>
          <td class="requests">${m.inference_count}</td>
          <td>${st.success?.count ?? 0}</td>
          <td>${st.fail?.count ?? 0}</td>
          <td>${fmtMs(meanMs(st.success))}</td>
          <td class="latency-percentiles">${fmtPercentiles(m.latency_percentiles_us?.request)}</td>
          <td>${fmtMs(meanMs(st.queue))}</td>
          <td class="queue-percentiles">${fmtPercentiles(m.latency_percentiles_us?.queue)}</td>
          <td>${fmtMs(meanMs(st.compute_infer))}</td>
          <td>${m.pending_count ?? 0}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

function Stats({ s }) {
  return html`<section aria-labelledby="view-heading">
    <h2 id="view-heading" tabindex="-1">Statistics</h2>
    <button type="button" id="stats-refresh" onClick=${() => attempt(loadStats)}>Refresh</button>
    <${StatsTable} stats=${s.stats} withTenant=${s.caller?.role === 'admin' && !s.singleUser} />
  </section>`;
}

function Logs({ s }) {
  const submit = (e) => {
    e.preventDefault();
    void readLog();
  };
  const lines = s.log?.lines ?? [];
  return html`<section aria-labelledby="view-heading">
    <h2 id="view-heading" tabindex="-1">Model logs</h2>
    <form onSubmit=${submit}>
      <${ModelSelect}
        id="log-model"
        label="Model"
        value=${s.logModel}
        names=${modelNames(s, false)}
        onChange=${(v) => update({ logModel: v, log: undefined })}
      />
      <button type="submit" id="log-submit" disabled=${s.busy || !s.logModel}>Show log</button>
    </form>
    ${
      s.log &&
      html`<p>${lines.length} lines${s.log.dropped_lines ? `, ${s.log.dropped_lines} older ones dropped` : ''}.</p>
        <ol id="log-lines" class="log">
          ${lines.map(
            (l) =>
              html`<li key=${l.seq} class=${`level-${l.level}`}>
                <time>${l.time}</time> <span class="level">${l.level}</span> <span class="source">${l.source}</span> v${l.version}:
                <span class="message">${l.message}</span>
              </li>`,
          )}
        </ol>`
    }
  </section>`;
}

function Operator({ s }) {
  const rows = s.tenants.flatMap((t) => (t.models ?? []).map((m) => ({ tenant: t.id, ...m })));
  return html`<section aria-labelledby="view-heading">
    <h2 id="view-heading" tabindex="-1">Operator</h2>
    <button type="button" onClick=${() => attempt(loadOperator)}>Refresh</button>
    <h3>Server health</h3>
    <dl id="health">
      <dt>Live</dt>
      <dd>${s.health ? (s.health.live ? 'yes' : 'no') : '–'}</dd>
      <dt>Ready</dt>
      <dd>${s.health ? (s.health.ready ? 'yes' : 'no') : '–'}</dd>
      <dt>Server</dt>
      <dd>${s.server ? `${s.server.name} ${s.server.version}` : '–'}</dd>
      <dt>Sandboxed backend API</dt>
      <dd>${s.served.join(', ')}</dd>
    </dl>
    <h3>Tenants, quotas and usage</h3>
    ${
      s.singleUser
        ? html`<p>Single-user mode: no tenants.</p>`
        : html`<table id="tenants">
            <caption class="visually-hidden">
              Tenants with their quotas and usage
            </caption>
            <thead>
              <tr>
                <th scope="col">Tenant</th>
                <th scope="col">Role</th>
                <th scope="col">Weight</th>
                <th scope="col">Models (ready) / max</th>
                <th scope="col">Requests</th>
                <th scope="col">Failed</th>
                <th scope="col">Pending / max in flight</th>
                <th scope="col">Rate (req/s, burst)</th>
                <th scope="col">Upload limit (bytes)</th>
                <th scope="col">Memory per instance / total (bytes)</th>
              </tr>
            </thead>
            <tbody>
              ${s.tenants.map(
                (t) =>
                  html`<tr key=${t.id}>
                    <th scope="row">${t.id}</th>
                    <td>${t.role}</td>
                    <td>${t.weight}</td>
                    <td>${t.usage.models} (${t.usage.ready_models}) / ${t.quotas.max_models}</td>
                    <td>${t.usage.inference_count}</td>
                    <td>${t.usage.failed_count}</td>
                    <td>${t.usage.pending_count} / ${t.quotas.max_inflight}</td>
                    <td>${t.quotas.requests_per_second}, ${t.quotas.burst}</td>
                    <td>${t.quotas.max_upload_bytes}</td>
                    <td>${t.quotas.max_memory_per_instance_bytes} / ${t.quotas.max_memory_total_bytes}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <h3>Every model</h3>
    <table id="all-models">
      <caption class="visually-hidden">
        Every tenant's models
      </caption>
      <thead>
        <tr>
          <th scope="col">Tenant</th>
          <th scope="col">Model</th>
          <th scope="col">Version</th>
          <th scope="col">State</th>
          <th scope="col">Last error</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (m) =>
            html`<tr key=${`${m.tenant}/${m.name}/${m.version}`}>
              <td>${m.tenant}</td>
              <th scope="row">${m.name}</th>
              <td>${m.version ?? '–'}</td>
              <td>${m.state ?? 'not loaded'}</td>
              <td class="reason">${m.reason ?? ''}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    <h3>Serving models' statistics</h3>
    <${StatsTable} stats=${s.stats} withTenant=${!s.singleUser} />
  </section>`;
}

const VIEWS = { models: Models, upload: Upload, infer: Infer, stats: Stats, logs: Logs, operator: Operator };

function App({ s }) {
  if (!s.signedIn) return html`<${SignIn} s=${s} />`;
  const View = VIEWS[s.view];
  const who = s.singleUser ? 'operator (single-user server)' : `${s.caller.id} (${s.caller.role})`;
  return html`<div class="shell">
    <header>
      <h1>Warden console</h1>
      <p id="who">Signed in as ${who}</p>
      <button type="button" id="sign-out" onClick=${signOut}>Sign out</button>
    </header>
    <${Nav} s=${s} />
    <main aria-busy=${s.busy ? 'true' : 'false'}>
      <${Messages} s=${s} />
      <${View} s=${s} />
    </main>
  </div>`;
}

update({});
