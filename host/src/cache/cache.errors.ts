/**
 * The error catalogue of the response cache (cache/: the Redis cache's settings and start-up),
 * one function per message. Triton's wording where Triton has the message (redis_cache
 * `src/redis_cache.cc`), Warden's otherwise.
 */
import { type TritonError, internal, invalidArg } from '../contract/errors.js';

/** INVALID_ARG: `--cache-config redis,...` without `host` or without `port` (Triton's text). */
export function redisAddressMissing(): TritonError {
  return invalidArg(
    "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify 'host' and 'port' in the configuration - e.g. tritonserver --cache-config redis,host=redis --cache-config redis,port=6379 --model-repository=/models ...",
  );
}

/** INVALID_ARG: a Redis cache setting that must be an integer in a range (Warden's text). */
export function redisSettingNotInteger(key: string, value: string, min: number, max: number): TritonError {
  return invalidArg(`--cache-config=redis,${key}=${value}: '${key}' expects an integer from ${min} to ${max}`);
}

/** INTERNAL: the Redis cache could not connect, authenticate or PING at start-up (Triton's prefix, the client's reason). */
export function redisInitFailed(reason: string): TritonError {
  return internal(`Failed to initialize RedisCache: ${reason}`);
}
