/**
 * `s3://` repository locations as Triton parses them (core filesystem/implementations/s3.h):
 * endpoint forms, slash clean-up, and the names Warden refuses where Triton would guess.
 */
import { describe, expect, it } from 'vitest';
import { isObjectStoreUrl, parseS3Location } from '../../host/src/repository/object-store/s3-location.js';
import { regionFromEnvironment } from '../../host/src/repository/object-store/s3-client.js';

describe('parseS3Location', () => {
  it.each([
    ['s3://bucket/path/to/repo', undefined, 'bucket', 'path/to/repo'],
    ['s3://bucket', undefined, 'bucket', ''],
    ['s3://bucket/', undefined, 'bucket', ''],
    ['s3:///bucket//path///repo//', undefined, 'bucket', 'path/repo'],
    ['s3://localhost:9000/models/repo', 'http://localhost:9000', 'models', 'repo'],
    ['s3://http://10.0.0.5:9000/models', 'http://10.0.0.5:9000', 'models', ''],
    ['s3://https://minio.example.com:443/my.bucket-1/a/b', 'https://minio.example.com:443', 'my.bucket-1', 'a/b'],
  ])('%s', (url, endpoint, bucket, prefix) => {
    expect(parseS3Location(url)).toEqual({ url, endpoint, bucket, prefix });
  });

  it.each([
    ['s3://', 'No bucket name found in path: s3://'],
    ['s3://localhost:9000/', 'No bucket name found in path: s3://localhost:9000/'],
    ['s3://http://bucket/path', "invalid s3 location 's3://http://bucket/path': an endpoint is written s3://[http://|https://]host:port/bucket/path"],
    ['s3://host:70000/bucket', "invalid s3 location 's3://host:70000/bucket': an endpoint is written s3://[http://|https://]host:port/bucket/path"],
    ['s3://Bucket/path', "invalid s3 location 's3://Bucket/path': 'Bucket' is not a bucket name"],
    ['s3://a..b/path', "'a..b' is not a bucket name"],
    ['s3://bucket/../etc', "invalid s3 location 's3://bucket/../etc': a path component is '.', '..' or holds a control character"],
    ['s3://bucket/a\nb', 'a path component'],
    ['gs://bucket/x', "not an s3:// location: 'gs://bucket/x'"],
  ])('refuses %j', (url, message) => {
    expect(() => parseS3Location(url)).toThrow(message);
  });

  it('tells object-store locations from local paths', () => {
    expect(['s3://b/x', 'gs://b/x', 'as://a/c/x', '/models', 'models', './s3:/x'].map(isObjectStoreUrl)).toEqual([true, true, true, false, false, false]);
  });
});

describe('regionFromEnvironment', () => {
  it("prefers AWS_DEFAULT_REGION (Triton's variable), then AWS_REGION; undefined leaves it to the profile", () => {
    expect(regionFromEnvironment({ AWS_DEFAULT_REGION: 'eu-west-1', AWS_REGION: 'us-west-2' })).toBe('eu-west-1');
    expect(regionFromEnvironment({ AWS_REGION: 'us-west-2' })).toBe('us-west-2');
    expect(regionFromEnvironment({ AWS_DEFAULT_REGION: '' })).toBeUndefined();
  });
});
