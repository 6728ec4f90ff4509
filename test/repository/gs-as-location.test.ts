/**
 * `gs://` and `as://` repository locations as Triton parses them (core
 * filesystem/implementations/gcs.h `ParsePath`, as.h `AS_URL_PATTERN`), the names Warden refuses
 * where Triton would guess, and the Azure settings refused before any request is sent.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseAsLocation } from '../../host/src/repository/object-store/as-location.js';
import { parseGsLocation } from '../../host/src/repository/object-store/gs-location.js';
import { openRepositories } from '../../host/src/repository/open-repositories.js';

describe('parseGsLocation', () => {
  it.each([
    ['gs://bucket/path/to/repo', 'bucket', 'path/to/repo'],
    ['gs://bucket', 'bucket', ''],
    ['gs://my_bucket.example.com//a///b/', 'my_bucket.example.com', 'a/b'],
  ])('%s', (url, bucket, prefix) => {
    expect(parseGsLocation(url)).toEqual({ url, bucket, prefix });
  });

  it.each([
    ['gs://', 'No bucket name found in path: gs://'],
    ['gs:///x', 'No bucket name found in path: gs:///x'],
    ['gs://Bucket/x', "invalid gs location 'gs://Bucket/x': 'Bucket' is not a bucket name"],
    ['gs://-b-/x', "'-b-' is not a bucket name"],
    [`gs://${'a'.repeat(64)}/x`, 'is not a bucket name'],
    ['gs://a..b/x', "'a..b' is not a bucket name"],
    ['gs://bucket/a/../b', "invalid gs location 'gs://bucket/a/../b': a path component is '.', '..' or holds a control character"],
    ['s3://bucket/x', "not a gs:// location: 's3://bucket/x'"],
  ])('refuses %j', (url, message) => {
    expect(() => parseGsLocation(url)).toThrow(message);
  });
});

describe('parseAsLocation', () => {
  it.each([
    ['as://acct1/models/path/to/repo', {}, 'acct1', 'models', 'path/to/repo'],
    ['as://acct1.blob.core.windows.net/models', {}, 'acct1', 'models', ''],
    ['as://acct1/models//a///b/?sv=ignored', {}, 'acct1', 'models', 'a/b'],
    ['as://ignored/models/r', { AZURE_STORAGE_ACCOUNT: 'fromenv' }, 'fromenv', 'models', 'r'],
  ])('%s %j', (url, env, account, container, prefix) => {
    expect(parseAsLocation(url, env)).toEqual({ url, account, container, prefix });
  });

  it.each([
    ['as://acct1', 'Invalid azure storage path: as://acct1'],
    ['as://acct1/', 'Invalid azure storage path: as://acct1/'],
    ['as://Acct/models', "invalid as location 'as://Acct/models': 'Acct' (the location) is not a storage account name"],
    ['as://acct1/Models/x', "'Models' is not a container name"],
    ['as://acct1/a--b/x', "'a--b' is not a container name"],
    ['as://acct1/models/./x', "invalid as location 'as://acct1/models/./x': a path component is '.', '..'"],
  ])('refuses %j', (url, message) => {
    expect(() => parseAsLocation(url, {})).toThrow(message);
  });

  it('names AZURE_STORAGE_ACCOUNT when that is the bad account', () => {
    expect(() => parseAsLocation('as://acct1/models', { AZURE_STORAGE_ACCOUNT: 'Bad_Name' })).toThrow(
      "'Bad_Name' (AZURE_STORAGE_ACCOUNT) is not a storage account name",
    );
  });
});

describe('as:// settings refused before any request', () => {
  const open = (spec: string, env: NodeJS.ProcessEnv) =>
    openRepositories([spec], { directory: '/nonexistent-cache', maxBytes: 1 }, pino({ level: 'silent' }), env);

  it("refuses Triton's Azure AD auth types, which this build does not implement", async () => {
    await expect(open('as://acct1/models', { AZURE_STORAGE_AUTH_TYPE: 'managed_identity' })).rejects.toThrow(
      'AZURE_STORAGE_AUTH_TYPE="managed_identity" is not supported by this build',
    );
  });

  it("refuses a location whose account is not the connection string's, and an unreadable connection string without echoing it", async () => {
    await expect(
      open('as://acct1/models', { AZURE_STORAGE_CONNECTION_STRING: 'AccountName=other;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/other' }),
    ).rejects.toThrow("model repository 'as://acct1/models' names storage account 'acct1' but AZURE_STORAGE_CONNECTION_STRING is for account 'other'");
    const bad = open('as://acct1/models', { AZURE_STORAGE_CONNECTION_STRING: 'secret-garbage' });
    await expect(bad).rejects.toThrow('AZURE_STORAGE_CONNECTION_STRING cannot be read');
    await expect(bad).rejects.not.toThrow('secret-garbage');
  });
});
