/**
 * One S3 client per object-store location, configured as Triton's S3 filesystem configures its
 * own (core `filesystem/implementations/s3.h`): credentials from `AWS_ACCESS_KEY_ID` /
 * `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`), else the profile `AWS_PROFILE` (or
 * `default`) of the shared config and credentials files (the SDK's default chain); the region from
 * `AWS_DEFAULT_REGION`, else `AWS_REGION`, else the profile's, else `us-east-1`; path-style requests
 * (`host/bucket/key`), so S3-compatible stores work without DNS. The endpoint is the location's
 * (`s3://host:port/...`) or, for a location without one, the SDK's `AWS_ENDPOINT_URL_S3` /
 * `AWS_ENDPOINT_URL`.
 */
import { HeadBucketCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import * as err from './object-store.errors.js';
import type { S3Location } from './s3-location.js';

/** The region as Triton's S3 client picks it from `env`; undefined = ask the SDK (the profile's region). */
export function regionFromEnvironment(env: NodeJS.ProcessEnv): string | undefined {
  return env.AWS_DEFAULT_REGION || env.AWS_REGION || undefined;
}

/**
 * A client for `location`'s bucket, checked with `HeadBucket` as Triton checks it.
 * @throws TritonError INTERNAL "Unable to create S3 filesystem client. Check account credentials. ..."
 */
export async function openS3Client(location: S3Location, env: NodeJS.ProcessEnv): Promise<S3Client> {
  const config: S3ClientConfig = {
    forcePathStyle: true,
    region: regionFromEnvironment(env),
    endpoint: location.endpoint,
    // S3-compatible stores differ in which checksums they know: ask for them only where S3 requires one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  };
  let client = new S3Client(config);
  if (config.region === undefined) {
    // No region in the environment nor in the profile: Triton's client uses us-east-1.
    const region = await client.config.region().catch(() => undefined);
    if (!region) client = new S3Client({ ...config, region: 'us-east-1' });
  }
  try {
    await client.send(new HeadBucketCommand({ Bucket: location.bucket }));
  } catch (e) {
    client.destroy();
    throw err.clientCheckFailed(sdkErrorName(e), sdkErrorMessage(e));
  }
  return client;
}

/** An SDK error's name (`NoSuchKey`, `AccessDenied`, `TimeoutError`, ...). */
export function sdkErrorName(e: unknown): string {
  return e instanceof Error ? e.name : 'Error';
}

/** An SDK error's message. */
export function sdkErrorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** True when `e` is the store's "no such key" (a missing object). */
export function isMissing(e: unknown): boolean {
  const name = sdkErrorName(e);
  return name === 'NoSuchKey' || name === 'NotFound' || (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode === 404;
}
