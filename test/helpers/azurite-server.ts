/**
 * An Azure Blob Storage emulator for tests: Microsoft's Azurite (npm `azurite`, a devDependency),
 * its blob service started in memory on a free local port, telemetry off. It speaks the Blob REST
 * API (container properties, hierarchical and flat listings, conditional downloads), so Warden's
 * `@azure/storage-blob` client, pointed at it by `AZURE_STORAGE_CONNECTION_STRING`, talks to it as
 * to Azure. Its account is Azurite's documented development account (`devstoreaccount1` and its
 * published key: not a secret).
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../host/src/project.js';
import { type BucketTestServer, putTreeWith, startEmulator } from './object-store-server.js';
import { freePort } from './repo.js';

/** Azurite's development account. */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/** A running Azurite blob service. */
export interface AzuriteTestServer extends BucketTestServer {
  /** `AZURE_STORAGE_CONNECTION_STRING` for the development account at this server. */
  readonly connectionString: string;
}

/** Start Azurite's blob service. The caller stops it. */
export async function startAzurite(): Promise<AzuriteTestServer> {
  const port = await freePort();
  const azurite = await startEmulator(
    'azurite-blob',
    join(PROJECT_ROOT, 'node_modules', '.bin', 'azurite-blob'),
    ['--blobHost', '127.0.0.1', '--blobPort', String(port), '--inMemoryPersistence', '--disableTelemetry', '--skipApiVersionCheck', '--silent'],
    port,
  );
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${azurite.endpoint}/${AZURITE_ACCOUNT};`;
  const service = BlobServiceClient.fromConnectionString(connectionString);
  const put = async (container: string, key: string, body: string | Uint8Array) => {
    const data = Buffer.from(body);
    await service.getContainerClient(container).getBlockBlobClient(key).upload(data, data.length);
  };
  return {
    connectionString,
    createBucket: async (container) => {
      await service.getContainerClient(container).create();
    },
    put,
    putTree: putTreeWith(put),
    remove: async (container, key) => {
      await service.getContainerClient(container).deleteBlob(key);
    },
    stop: () => azurite.stop(),
  };
}
