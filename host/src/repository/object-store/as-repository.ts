/**
 * A model repository in an Azure Blob Storage container (Triton's `as://` repositories, core
 * `filesystem/implementations/as.h`), through `@azure/storage-blob`: the Azure half of an
 * {@link ObjectStoreRepository} (object-store-repository.ts holds the listing rules, the bounds on
 * hostile blob names and the local cache).
 *
 * Credentials, as Triton reads them: `AZURE_STORAGE_KEY` (Shared Key) for the account of the
 * location (or `AZURE_STORAGE_ACCOUNT`), else anonymous access; the service is
 * `https://<account>.blob.core.windows.net`. Triton's `AZURE_STORAGE_AUTH_TYPE=managed_identity` /
 * `default` (Azure AD tokens) are refused by this build with a clear error.
 *
 * Another endpoint (Azurite, Azure Stack, a private endpoint): `AZURE_STORAGE_CONNECTION_STRING`,
 * the Azure SDKs' and CLI's variable, when set, gives the endpoint and the credentials instead
 * (`BlobEndpoint=http://host:port/account;AccountName=...;AccountKey=...`, or a SAS form); the
 * location's account must then be the connection string's `AccountName`, where it has one.
 */
import { BlobServiceClient, type ContainerClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import type { Readable } from 'node:stream';
import type { AsLocation } from './as-location.js';
import {
  guardedPages,
  ObjectStoreRepository,
  storeError,
  type ObjectStore,
  type ObjectStoreRepositoryOptions,
  type StoreObject,
} from './object-store-repository.js';
import * as err from './object-store.errors.js';

/** Blobs per listing page (the service's most). */
const PAGE = 5000;

/**
 * The repository at `location`, its container checked (its properties read) before start-up goes on.
 * @throws TritonError INVALID_ARG for an unsupported auth type, an unreadable connection string or
 *   an account that is not the connection string's; INTERNAL "Unable to create Azure filesystem
 *   client. Check account credentials. ..." when the container cannot be reached (start-up fails)
 */
export async function openAsRepository(location: AsLocation, opts: ObjectStoreRepositoryOptions): Promise<ObjectStoreRepository> {
  const env = opts.env ?? process.env;
  const service = serviceClient(location, env);
  const container = service.getContainerClient(location.container);
  try {
    await container.getProperties();
  } catch (e) {
    const { name, message } = storeError(e);
    throw err.azureClientCheckFailed(name, message);
  }
  // The service URL of a SAS connection string holds the token: log its origin and path only.
  const endpoint = new URL(service.url);
  opts.logger.info({ repository: location.url, endpoint: endpoint.origin + endpoint.pathname }, 'object-store model repository opened');
  return new ObjectStoreRepository(location.url, location.prefix, new AzureStore(container), opts.cache);
}

/** The service client for `location`'s account, from the environment as described above. */
function serviceClient(location: AsLocation, env: NodeJS.ProcessEnv): BlobServiceClient {
  const options = { retryOptions: { maxTries: 3, tryTimeoutInMs: 60_000 } };
  const connection = env.AZURE_STORAGE_CONNECTION_STRING;
  if (connection) {
    const connected = /(?:^|;)\s*AccountName=([^;]*)/i.exec(connection)?.[1]?.trim();
    if (connected && connected !== location.account) throw err.azureAccountMismatch(location.url, location.account, connected);
    try {
      return BlobServiceClient.fromConnectionString(connection, options);
    } catch {
      throw err.azureConnectionStringInvalid();
    }
  }
  const auth = env.AZURE_STORAGE_AUTH_TYPE || (env.AZURE_STORAGE_KEY ? 'key' : '');
  if (auth !== '' && auth !== 'key') throw err.azureAuthUnsupported(auth);
  const url = `https://${location.account}.blob.core.windows.net`;
  return env.AZURE_STORAGE_KEY
    ? new BlobServiceClient(url, new StorageSharedKeyCredential(location.account, env.AZURE_STORAGE_KEY), options)
    : new BlobServiceClient(url, undefined, options);
}

/** One container: hierarchical and flat listings by page, downloads with `If-Match` on the listed ETag. */
class AzureStore implements ObjectStore {
  constructor(private readonly container: ContainerClient) {}

  async *prefixes(prefix: string): AsyncIterable<readonly string[]> {
    const pages = this.container.listBlobsByHierarchy('/', { prefix }).byPage({ maxPageSize: PAGE });
    for await (const page of guardedPages(pages, (e) => err.azureListFailed(prefix, storeError(e).message))) {
      yield (page.segment.blobPrefixes ?? []).map((p) => p.name);
    }
  }

  async *objects(prefix: string): AsyncIterable<readonly StoreObject[]> {
    const pages = this.container.listBlobsFlat({ prefix }).byPage({ maxPageSize: PAGE });
    for await (const page of guardedPages(pages, (e) => err.azureListFailed(prefix, storeError(e).message))) {
      yield page.segment.blobItems.map((b) => ({ key: b.name, size: b.properties.contentLength ?? 0, tag: b.properties.etag ?? '' }));
    }
  }

  async read(key: string, tag: string): Promise<Readable> {
    const out = await this.container.getBlobClient(key).download(0, undefined, { conditions: tag ? { ifMatch: tag } : undefined });
    return out.readableStreamBody as Readable;
  }

  reason(e: unknown): string {
    return storeError(e).name;
  }
}
