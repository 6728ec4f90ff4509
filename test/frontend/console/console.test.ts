/**
 * The web console (`--console`; host/src/frontend/console/, host/console-assets/, docs/console.md)
 * in a real headless Chromium (Debian's `chromium`, driven by puppeteer-core), on a multi-tenant
 * server: a tenant signs in with its token, uploads a sandboxed backend through the form (checked
 * before it is sent), runs a test inference from the form, sees its statistics change and reads
 * its model's log; a second tenant sees none of it; an administrator sees every tenant, quota,
 * model and the server's health. Model-provided text (a log line, a model name) holding HTML is
 * shown as text and never runs. Every form control has an accessible name and is reached by Tab.
 * Skipped, saying why, where no Chromium binary is installed.
 *
 * With CONSOLE_SCREENSHOTS=1 (scripts/console-screenshots.mjs) each view is also written to
 * docs/console/<view>.png.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import puppeteer, { type Browser, type Page, type SerializedAXNode } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../../host/src/frontend/console/routes.js';
import { ensureBuilt } from '../../backends/wasm/helpers.js';
import { fetchAs, PROJECT_ROOT, tempRepo } from '../../helpers/repo.js';
import { startTestServer, tenantServerPerSuite, testTokens } from '../../helpers/servers.js';
import { chromiumPath, idle, openView, setValue, textOf } from './helpers.js';

const CHROMIUM = chromiumPath();
const TOKENS = testTokens('acme', 'bob', 'ops');
type Who = keyof typeof TOKENS;
const FIXTURE = join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'log_lines.wasm');
/** What a hostile model puts where the console shows it: it must stay text. */
const HOSTILE_ID = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_NAME = '<img src=x onerror=window.__pwned=2>';
const SHOTS = process.env.CONSOLE_SCREENSHOTS ? join(PROJECT_ROOT, 'docs', 'console') : undefined;

if (!CHROMIUM) console.warn('console browser test skipped: no Chromium binary (apt-get install chromium, or set CHROMIUM_PATH)');

describe.skipIf(!CHROMIUM)('the web console in headless Chromium', () => {
  const suite = tenantServerPerSuite(async () => {
    await ensureBuilt();
    const tenants = [
      { id: 'acme', token: TOKENS.acme },
      { id: 'bob', token: TOKENS.bob },
      { id: 'ops', role: 'admin' as const, token: TOKENS.ops },
    ];
    return { repo: tempRepo([]), tenants, opts: { console: true } };
  }, 120_000);
  let browser: Browser;
  let page: Page;
  /** Every load request the page sent (the form must send none while it has problems). */
  const loads: string[] = [];
  const pageErrors: string[] = [];
  const url = () => `${suite.server.httpUrl}/console/`;

  beforeAll(async () => {
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 800 });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    // A Content-Security-Policy violation (an inline script or style, eval, another origin) is reported on the console.
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) pageErrors.push(m.text());
    });
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/load')) loads.push(r.url());
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  const shot = async (name: string) => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, `${name}.png`) });
  };
  const signIn = async (who: Who | 'nobody') => {
    await page.goto(url());
    await page.waitForSelector('#token');
    await page.type('#token', who === 'nobody' ? 'not-a-token-0123456789abcdefghij' : TOKENS[who]);
    // Keyboard: Enter in the field submits the form.
    await page.keyboard.press('Enter');
  };
  const call = (who: Who, method: 'GET' | 'POST', path: string, body?: unknown) => fetchAs(TOKENS[who], method, `${suite.server.httpUrl}${path}`, body);

  it('serves its files without credentials under its path only, with a strict CSP; the API still needs a token', async () => {
    const base = suite.server.httpUrl;
    const page0 = await fetch(`${base}/console/`);
    expect(page0.status).toBe(200);
    expect(page0.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page0.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toMatch(/script-src 'self';/);
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval/);
    const html = await page0.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/); // no inline script
    expect(html).not.toMatch(/https?:\/\//); // nothing from another origin (no CDN)
    for (const f of ['app.js', 'validate.js', 'console.css', 'vendor/preact.mjs', 'vendor/htm.mjs'])
      expect((await fetch(`${base}/console/${f}`)).status, f).toBe(200);
    const redirect = await fetch(`${base}/console`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([308, '/console/']);
    expect((await fetch(`${base}/console/index.html`)).status).toBe(404);
    expect((await fetch(`${base}/console/vendor/nope.mjs`)).status).toBe(404);
    expect((await fetch(`${base}/v2/repository/index`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${base}/v2/tenants`)).status).toBe(401);
    // Off by default: the same path is a plain 404.
    const repo = tempRepo([]);
    const plain = await startTestServer(repo);
    try {
      expect((await fetch(`${plain.httpUrl}/console/`)).status).toBe(404);
      expect((await fetch(`${plain.httpUrl}/console/app.js`)).status).toBe(404);
    } finally {
      await plain.stop();
      repo.cleanup();
    }
  });

  it('refuses a token it does not know, then signs the tenant in: no models yet', async () => {
    await signIn('nobody');
    await page.waitForSelector('#error');
    expect(await textOf(page, '#error')).toMatch(/401/);
    await shot('sign-in');
    await signIn('acme');
    expect(await textOf(page, '#who')).toBe('Signed in as acme (tenant)');
    await idle(page);
    expect(await textOf(page, '#no-models')).toMatch(/No models yet/);
    expect(await page.$('#nav-operator')).toBeNull();
  });

  it('checks the upload form before sending anything, then uploads and loads the backend', async () => {
    await openView(page, 'upload', 'Upload a sandboxed backend');
    // Not a component, too many instances, a memory limit over the quota, a bad name: nothing is sent.
    const junk = join(mkdtempSync(join(tmpdir(), 'warden-console-')), 'not-a-component.wasm');
    writeFileSync(junk, 'not a component');
    await setValue(page, '#name', 'bad name!');
    await (await page.$('input#file'))!.uploadFile(junk);
    await page.waitForFunction(() => document.getElementById('file-help')?.textContent?.includes('15 bytes'));
    await setValue(page, '#instances', '99');
    await setValue(page, '#memoryLimitBytes', String(1024 ** 4));
    await page.click('#upload-submit');
    await page.waitForSelector('#upload-problems');
    const problems = await textOf(page, '#upload-problems');
    expect(problems).toMatch(/model name is 1 to 64/);
    expect(problems).toMatch(/names no warden:backend WIT version/);
    expect(problems).toMatch(/Instances is 99; your limit \(max_instances_per_model\) is 4/);
    expect(problems).toMatch(/Memory limit is 1099511627776; your limit \(max_memory_per_instance_bytes\) is 268435456/);
    expect(await page.$eval('#instances', (el) => el.getAttribute('aria-invalid'))).toBe('true');
    await shot('upload');
    expect(loads).toEqual([]);
    rmSync(dirname(junk), { recursive: true, force: true });

    await setValue(page, '#name', 'chatty');
    await (await page.$('input#file'))!.uploadFile(FIXTURE);
    await page.waitForFunction(() => document.getElementById('file-help')?.textContent?.includes('log_lines.wasm'));
    await setValue(page, '#instances', '1');
    await setValue(page, '#memoryLimitBytes', '');
    await setValue(page, '#logLimitBytes', '65536');
    await page.click('#upload-submit');
    await page.waitForSelector('#notice', { timeout: 60_000 });
    expect(await textOf(page, '#notice')).toBe('Model chatty is loaded.');
    expect(loads).toHaveLength(1);
    // The server holds what the form built.
    const config = await call('acme', 'GET', '/v2/models/chatty/config');
    expect(config.json).toMatchObject({ backend: 'wasm', input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }] });
    expect(config.json.parameters.log_limit_bytes).toEqual({ string_value: '65536' });
  });

  it('lists the model with its state, engine and limits', async () => {
    await openView(page, 'models', 'Your models');
    await page.waitForSelector('#models');
    const row = await page.$$eval('#models tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    // The server filled the sandbox limits the form left empty from the tenant's quotas.
    expect(row).toEqual([['chatty', '1', 'READY', 'wasm', 'server default', '1', 'memory 268435456 B, execute 10000 ms, log 65536 B', '']]);
    await shot('models');
  });

  it('runs a test inference from the form and sees the statistics change', async () => {
    /** The view's request count of chatty once it shows `n` after a refresh (the table may show the previous answer until then). */
    const requests = async (n: number) => {
      await openView(page, 'stats', 'Statistics');
      await page.click('#stats-refresh');
      const cell = '#stats tr[data-model="chatty"] .requests';
      await page.waitForFunction((sel, want) => document.querySelector(sel)?.textContent === want, { timeout: 10_000 }, cell, String(n)).catch(() => undefined);
      return Number(await page.$eval(cell, (el) => el.textContent));
    };
    expect(await requests(0)).toBe(0);
    const row = '#stats tr[data-model="chatty"]';
    // No timed request yet: the percentile cells show a dash.
    expect(await textOf(page, `${row} .latency-percentiles`)).toBe('–');
    expect(await textOf(page, `${row} .queue-percentiles`)).toBe('–');
    await openView(page, 'infer', 'Test inference');
    await page.select('#infer-model', 'chatty');
    // The form fills a request from the model's metadata.
    await page.waitForFunction(() => (document.getElementById('infer-request') as HTMLTextAreaElement).value.includes('INPUT0'));
    const request = { id: HOSTILE_ID, inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1.5, 2] }] };
    await setValue(page, '#infer-request', JSON.stringify(request));
    await page.click('#infer-submit');
    await page.waitForSelector('#infer-result');
    const answer = JSON.parse(await textOf(page, '#infer-result'));
    expect(answer.outputs[0]).toMatchObject({ name: 'OUTPUT0', data: [1.5, 2] });
    await shot('infer');
    expect(await requests(1)).toBe(1);
    await openView(page, 'infer', 'Test inference');
    await page.click('#infer-submit');
    await page.waitForSelector('#notice');
    expect(await requests(2)).toBe(2);
    // p50 / p90 / p99 of the two requests (ms, from the statistics' latency_percentiles_us): ordered, latency above zero.
    const percentiles = async (cls: string) => (await textOf(page, `${row} .${cls}`)).split(' / ').map(Number);
    const latency = await percentiles('latency-percentiles');
    expect(latency).toHaveLength(3);
    expect(latency[0]).toBeGreaterThan(0);
    expect(latency[0]).toBeLessThanOrEqual(latency[1]!);
    expect(latency[1]).toBeLessThanOrEqual(latency[2]!);
    const queue = await percentiles('queue-percentiles');
    expect(queue).toHaveLength(3);
    expect(queue.every((q) => q >= 0 && Number.isFinite(q))).toBe(true);
    await shot('statistics');
  });

  it("shows the model's log as text: a line holding HTML does not run", async () => {
    await openView(page, 'logs', 'Model logs');
    await page.select('#log-model', 'chatty');
    await page.click('#log-submit');
    await page.waitForSelector('#log-lines li');
    const messages = await page.$$eval('#log-lines .message', (els) => els.map((e) => e.textContent));
    expect(messages).toContain(`request ${HOSTILE_ID} seen`);
    expect(await page.$$('#log-lines img')).toHaveLength(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await shot('logs');
  });

  it('shows a model name holding HTML as text', async () => {
    const cfg = JSON.stringify({
      backend: 'wasm',
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    });
    const up = await call('acme', 'POST', `/v2/repository/models/${encodeURIComponent(HOSTILE_NAME)}/load`, {
      parameters: { config: cfg, 'file:1/model.wasm': readFileSync(FIXTURE).toString('base64') },
    });
    expect(up.status, up.text).toBe(200);
    await openView(page, 'models', 'Your models');
    await page.waitForFunction((n) => [...document.querySelectorAll('#models tbody th')].some((e) => e.textContent === n), {}, HOSTILE_NAME);
    expect(await page.$$('#models img')).toHaveLength(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(
      (await call('acme', 'POST', `/v2/repository/models/${encodeURIComponent(HOSTILE_NAME)}/unload`, { parameters: { delete_files: true } })).status,
    ).toBe(200);
  });

  it('gives every control of every view an accessible name, and reaches each control of the upload form with the keyboard', async () => {
    /** The page's controls in the accessibility tree (Chromium's, as a screen reader gets it). */
    const controls = async () => {
      const found: SerializedAXNode[] = [];
      const walk = (n: SerializedAXNode | null | undefined) => {
        if (!n) return;
        if (['textbox', 'combobox', 'spinbutton', 'checkbox', 'button', 'listbox', 'radio'].includes(n.role)) found.push(n);
        n.children?.forEach(walk);
      };
      walk(await page.accessibility.snapshot({ interestingOnly: false }));
      return found;
    };
    const names = new Set<string>();
    const views: [string, string][] = [
      ['models', 'Your models'],
      ['infer', 'Test inference'],
      ['stats', 'Statistics'],
      ['logs', 'Model logs'],
      ['upload', 'Upload a sandboxed backend'],
    ];
    for (const [view, heading] of views) {
      await openView(page, view, heading);
      const found = await controls();
      expect(
        found.filter((c) => !c.name?.trim()).map((c) => c.role),
        view,
      ).toEqual([]);
      for (const c of found) names.add(c.name!);
    }
    for (const name of [
      'Model name',
      'Backend component (.wasm)',
      'Instances',
      'Memory limit per instance (bytes)',
      'Execute timeout (ms)',
      'Request (JSON)',
      'Model',
      'Show log',
    ])
      expect(names.has(name), name).toBe(true);
    // Tab from the top of the upload view's page through every control.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const reached = new Set<string>();
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      reached.add(await page.evaluate(() => document.activeElement?.id ?? ''));
    }
    const wanted = await page.$$eval('input, select, textarea, button', (els) => els.map((e) => e.id));
    expect(wanted.length).toBeGreaterThan(15);
    expect(wanted.filter((id) => !reached.has(id))).toEqual([]);
    // The sign-in page too.
    await page.click('#sign-out');
    await page.waitForSelector('#token');
    expect((await controls()).map((c) => [c.role, c.name])).toEqual([
      ['textbox', 'Access token'],
      ['button', 'Sign in'],
    ]);
  });

  it("a second tenant sees none of the first tenant's models, statistics or logs", async () => {
    await signIn('bob');
    expect(await textOf(page, '#who')).toBe('Signed in as bob (tenant)');
    await idle(page);
    expect(await textOf(page, '#no-models')).toMatch(/No models yet/);
    await openView(page, 'stats', 'Statistics');
    expect(await page.$('#stats')).toBeNull();
    await openView(page, 'logs', 'Model logs');
    expect(await page.$$eval('#log-model option', (os) => os.map((o) => o.textContent))).toEqual(['Choose a model']);
    // The page's own requests with bob's token get the API's answer for a model that does not exist.
    const status = await page.evaluate(async (t) => (await fetch('/v2/models/chatty/log', { headers: { Authorization: `Bearer ${t}` } })).status, TOKENS.bob);
    expect(status).toBe(404);
    expect(
      await page.evaluate(
        async (t) => (await (await fetch('/v2/tenants', { headers: { Authorization: `Bearer ${t}` } })).json()).tenants.map((x: { id: string }) => x.id),
        TOKENS.bob,
      ),
    ).toEqual(['bob']);
  });

  it('shows an administrator every tenant with quotas and usage, every model and the server health', async () => {
    await page.click('#sign-out');
    await signIn('ops');
    expect(await textOf(page, '#who')).toBe('Signed in as ops (admin)');
    await openView(page, 'operator', 'Operator');
    await page.waitForSelector('#tenants tbody tr');
    const tenants = await page.$$eval('#tenants tbody tr', (rows) => rows.map((r) => [...r.children].slice(0, 6).map((c) => c.textContent)));
    expect(tenants).toEqual([
      // chatty, and the unloaded model with the hostile name (its record stays in the index)
      ['acme', 'tenant', '1', '2 (1) / 16', '2', '0'],
      ['bob', 'tenant', '1', '0 (0) / 16', '0', '0'],
      ['ops', 'admin', '1', '0 (0) / 16', '0', '0'],
    ]);
    const models = await page.$$eval('#all-models tbody tr', (rows) => rows.map((r) => [...r.children].slice(0, 4).map((c) => c.textContent)));
    expect(models).toContainEqual(['acme', 'chatty', '1', 'READY']);
    expect(models).toContainEqual(['acme', HOSTILE_NAME, '1', 'UNAVAILABLE']);
    expect(await page.$$('main img')).toHaveLength(0);
    expect(await page.$$eval('#health dd', (dds) => dds.slice(0, 2).map((d) => d.textContent))).toEqual(['yes', 'yes']);
    await shot('operator');
    expect(pageErrors).toEqual([]);
  });

  it('works on a single-user server: an empty token is the operator', async () => {
    const repo = tempRepo([]);
    const single = await startTestServer(repo, { console: true });
    try {
      await page.goto(`${single.httpUrl}/console/`);
      await page.waitForSelector('#token');
      await page.click('#token');
      await page.keyboard.press('Enter');
      expect(await textOf(page, '#who')).toBe('Signed in as operator (single-user server)');
      await idle(page);
      await openView(page, 'operator', 'Operator');
      expect(await page.$$eval('#health dd', (dds) => dds.slice(0, 2).map((d) => d.textContent))).toEqual(['yes', 'yes']);
      expect(await page.$('#tenants')).toBeNull();
    } finally {
      await single.stop();
      repo.cleanup();
    }
  });

  it('answers GET /v2/tenants as its OpenAPI description says, to an admin and to a tenant', async () => {
    const doc = await (await fetch(`${suite.server.httpUrl}/v2/openapi.json`, { headers: { Authorization: `Bearer ${TOKENS.ops}` } })).json();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc, 'openapi.json');
    const validate = ajv.getSchema('openapi.json#/components/schemas/Tenants')!;
    for (const who of ['ops', 'acme'] as const) {
      const r = await call(who, 'GET', '/v2/tenants');
      expect(r.status).toBe(200);
      expect(validate(r.json) ? [] : validate.errors).toEqual([]);
      expect(r.text).not.toMatch(/sha256:|"tokens"/);
    }
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v2/tenants', '/console', '/console/', '/console/{file}', '/console/vendor/{file}']));
    expect(doc.paths['/console/'].get.security).toEqual([]);
  });
});
