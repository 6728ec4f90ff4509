/**
 * Triton's own asyncio client, `tritonclient.http.aio` (aiohttp; it reads every body with
 * `auto_decompress=False` and sends `Accept-Encoding: gzip, deflate`), against Warden: health,
 * metadata, config, infer (JSON / binary outputs, gzip and deflate both ways), statistics,
 * repository index, load / unload, error status and text (`http_aio.py`). Every answer but a
 * compressed infer answer must be plain JSON: Warden compresses only where Triton's
 * `http_server.cc` does.
 */
import { describe, expect, it } from 'vitest';
import { useCompatServer } from './harness.js';

describe('tritonclient.http.aio against Warden (explicit mode)', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: ['simple'] });

  it('health, metadata, config, infer, statistics, repository index, load / unload, errors', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'http_aio.py',
      [],
      [
        'health',
        'server metadata, model metadata and config',
        'infer, JSON outputs',
        'infer, binary outputs',
        'infer, gzip request and response',
        'infer, deflate request and response',
        'statistics',
        'repository index',
        'load and unload',
        'errors: status and text',
        'shared memory status calls',
      ],
    );
    // The raw answers the client parsed: the same as a plain fetch reads them.
    const metadata = await (await fetch(`http://${c.url}/v2/models/simple`)).json();
    expect(r.observed['model_metadata']).toEqual(metadata);
    expect(r.observed['server_metadata']).toEqual(await (await fetch(`http://${c.url}/v2`)).json());
  });
});
