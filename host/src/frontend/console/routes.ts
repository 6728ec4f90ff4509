/**
 * The web console (docs/console.md; `--console`, `--console-path`): a small single-page app for
 * tenants and operators, served as static files on the HTTP port under one path. It is a client
 * of the HTTP API only: the page holds the token the user types (in memory) and sends it as
 * `Authorization: Bearer` on every API call, so every data access is the API's own tenancy check
 * (DESIGN "Multi-tenancy"); the files themselves carry no data and need no credentials.
 *
 * The files: the page, script and style sheet of `host/console-assets/`, and the front-end toolkit
 * (Preact and htm) from the package's own dependencies — nothing from a CDN. The page's
 * Content-Security-Policy allows scripts, styles and requests from the server's own origin only:
 * no inline script, no eval, no plugin, no framing.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { PROJECT_ROOT } from '../../project.js';
import { CONSOLE_ROUTES } from '../http/openapi/tenants.js';
import { OPENAPI_CONFIG_KEY } from '../http/openapi/types.js';

export { consolePathProblem, DEFAULT_CONSOLE_PATH, isConsolePath } from './path.js';

/** The Content-Security-Policy of every console answer. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Where the console's own files are (the package's `host/console-assets/`). */
const ASSETS = join(PROJECT_ROOT, 'host', 'console-assets');

/** A file the console serves: its bytes and media type. */
interface Asset {
  body: Buffer;
  type: string;
}

/** The folder of an installed package's main file (resolved from here, as Node resolves the package): its `dist/`. */
function distDir(name: string): string {
  return dirname(createRequire(import.meta.url).resolve(name));
}

/**
 * Read every file the console serves, once.
 * @throws Error when a file is missing (a broken install: the server does not start with `--console`)
 */
export function consoleAssets(): { files: Map<string, Asset>; vendor: Map<string, Asset> } {
  const js = 'text/javascript; charset=utf-8';
  const files = new Map<string, Asset>([
    ['index.html', { body: readFileSync(join(ASSETS, 'index.html')), type: 'text/html; charset=utf-8' }],
    ['app.js', { body: readFileSync(join(ASSETS, 'app.js')), type: js }],
    ['validate.js', { body: readFileSync(join(ASSETS, 'validate.js')), type: js }],
    ['console.css', { body: readFileSync(join(ASSETS, 'console.css')), type: 'text/css; charset=utf-8' }],
  ]);
  const vendor = new Map<string, Asset>([
    ['preact.mjs', { body: readFileSync(join(distDir('preact'), 'preact.mjs')), type: js }],
    ['htm.mjs', { body: readFileSync(join(distDir('htm'), 'htm.mjs')), type: js }],
  ]);
  return { files, vendor };
}

function send(reply: FastifyReply, asset: Asset | undefined): FastifyReply {
  if (!asset) return reply.code(404).type('application/json').send('{"error":"Not Found"}');
  return reply
    .code(200)
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache')
    .type(asset.type)
    .send(asset.body);
}

/**
 * Register the console's routes under `path` (checked by {@link consolePathProblem}): `path`
 * redirects to `path/`, which serves the page; `path/<file>` its files; `path/vendor/<file>` the
 * toolkit. Each route carries its OpenAPI description (openapi/tenants.ts). Only GET.
 * @throws Error when a console file is missing ({@link consoleAssets})
 */
export function installConsole(app: FastifyInstance, path: string): void {
  const { files, vendor } = consoleAssets();
  const get = (suffix: string, handler: (params: Record<string, string>, reply: FastifyReply) => FastifyReply) =>
    app.route({
      method: 'GET',
      url: path + suffix,
      config: { [OPENAPI_CONFIG_KEY]: CONSOLE_ROUTES[suffix] },
      handler: (req, reply) => handler(req.params as Record<string, string>, reply),
    });
  get('', (_p, r) => r.code(308).header('location', `${path}/`).send());
  get('/', (_p, r) => send(r, files.get('index.html')));
  get('/:file', (p, r) => send(r, p.file === 'index.html' ? undefined : files.get(p.file!)));
  get('/vendor/:file', (p, r) => send(r, vendor.get(p.file!)));
}
