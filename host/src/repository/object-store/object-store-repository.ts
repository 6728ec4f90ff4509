/**
 * A model repository below a prefix of an object store (Triton's cloud repositories: `s3://`,
 * `gs://`, `as://`; core `filesystem/implementations/{s3,gcs,as}.h`), over any store that lists
 * keys by prefix and reads an object by key: the store-specific part is an {@link ObjectStore}
 * (s3-repository.ts, gs-repository.ts, as-repository.ts), the rest is shared here.
 *
 * Models are the prefixes directly below the repository's (spec §5.1); a model's files are every
 * object below `<repository>/<model>/`, fetched through the bounded {@link ModelCache}; a model's
 * stamp is its listing's (every object's path, size and entity tag or generation).
 *
 * Object keys are hostile input: a key below a model's prefix becomes a path in the local cache
 * only when every component is a plain name (the rules of a model name, contract/names.ts) and
 * the listing is within {@link MAX_MODEL_OBJECTS} objects; otherwise the load fails and names the key.
 */
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { modelNameProblem } from '../../contract/names.js';
import type { ModelRepository, OpenedModel } from '../model-repository.js';
import type { ListedObject, ModelCache, ModelListing } from './model-cache.js';
import { listingStamp } from './model-cache.js';
import * as err from './object-store.errors.js';

/** Most objects one model may have. */
export const MAX_MODEL_OBJECTS = 10_000;
/** Most models one repository may list. */
export const MAX_REPOSITORY_MODELS = 100_000;
/** Longest object path below a model's prefix, UTF-8 bytes, and deepest nesting. */
const MAX_OBJECT_PATH_BYTES = 1024;
const MAX_OBJECT_DEPTH = 32;

/** Options of the object-store repositories' `open...Repository` functions. */
export interface ObjectStoreRepositoryOptions {
  cache: ModelCache;
  logger: Logger;
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** One object as a store lists it. */
export interface StoreObject {
  /** The full key (object or blob name). */
  readonly key: string;
  /** Bytes. */
  readonly size: number;
  /** The store's entity tag or generation: changes whenever the object does. */
  readonly tag: string;
}

/**
 * The store-specific half of an object-store repository: one bucket or container, listed and read.
 * Listing failures throw the store's TritonError (Triton's text for that store).
 */
export interface ObjectStore {
  /**
   * The prefixes directly below `prefix` (delimiter `/`), each ending in `/`, page by page.
   * @throws TritonError INTERNAL when the listing fails
   */
  prefixes(prefix: string): AsyncIterable<readonly string[]>;
  /**
   * Every object below `prefix`, page by page.
   * @throws TritonError INTERNAL when the listing fails
   */
  objects(prefix: string): AsyncIterable<readonly StoreObject[]>;
  /**
   * The object's bytes, if it still has the listed `tag` (a changed object fails the read where
   * the store can tell). @throws Error of the store's client (named by {@link ObjectStore.reason})
   */
  read(key: string, tag: string): Promise<Readable>;
  /** A short name of a read failure (an SDK error name or code), for the load's error. */
  reason(e: unknown): string;
}

/**
 * A store client's error, for messages: its string `code` (`ContainerNotFound`, `ECONNREFUSED`)
 * or else its name, and the first line of its message (at most 300 characters).
 */
export function storeError(e: unknown): { name: string; message: string } {
  const code = (e as { code?: unknown } | undefined)?.code;
  const name = typeof code === 'string' && code !== '' ? code : e instanceof Error ? e.name : 'Error';
  const message = (e instanceof Error ? e.message : String(e)).split('\n', 1)[0]!.trim().slice(0, 300);
  return { name, message };
}

/**
 * The pages of a store's paged listing, a failure of any page thrown as `fail(e)` (the store's
 * listing error, Triton's text).
 */
export async function* guardedPages<P>(pages: AsyncIterator<P>, fail: (e: unknown) => Error): AsyncGenerator<P> {
  for (;;) {
    let next: IteratorResult<P>;
    try {
      next = await pages.next();
    } catch (e) {
      throw fail(e);
    }
    if (next.done) return;
    yield next.value;
  }
}

export class ObjectStoreRepository implements ModelRepository {
  private readonly root: string;

  /**
   * @param location the location as the operator wrote it (for logs, and the cache's scope)
   * @param prefix the repository's key prefix, without leading or trailing `/` ('' = the bucket's root)
   */
  constructor(
    readonly location: string,
    prefix: string,
    private readonly store: ObjectStore,
    private readonly cache: ModelCache,
  ) {
    this.root = prefix === '' ? '' : `${prefix}/`;
  }

  /** @throws TritonError when the store cannot be listed, or it lists more than {@link MAX_REPOSITORY_MODELS} models */
  async models(): Promise<string[]> {
    const names: string[] = [];
    for await (const page of this.store.prefixes(this.root)) {
      for (const p of page) {
        const name = p.slice(this.root.length, -1);
        if (name.startsWith('.') || modelNameProblem(name) !== undefined) continue;
        names.push(name);
        if (names.length > MAX_REPOSITORY_MODELS) throw err.tooManyModels(this.location, MAX_REPOSITORY_MODELS);
      }
    }
    return names;
  }

  async stamp(name: string): Promise<string> {
    return listingStamp(await this.listing(name));
  }

  /** @throws TritonError when the model is gone, a key is not a plain path, or the copy cannot be made */
  async open(name: string): Promise<OpenedModel> {
    const listing = await this.listing(name);
    if (listing.objects.length === 0) throw err.modelNotInStore(name);
    const prefix = `${this.root}${name}/`;
    const tags = new Map(listing.objects.map((o) => [o.path, o.tag]));
    const copy = await this.cache.acquire(this.location, name, listing, async (path) => {
      try {
        // The object is the one listed; a concurrent overwrite fails the fetch (the next poll loads the new files).
        return await this.store.read(prefix + path, tags.get(path) ?? '');
      } catch (e) {
        throw err.objectFetchFailed(name, path, this.store.reason(e));
      }
    });
    return { modelPath: copy.modelPath, repositoryPath: dirname(copy.modelPath), stamp: copy.stamp, release: copy.release };
  }

  /**
   * Every object under the model's prefix, as paths relative to the model directory.
   * @throws TritonError INVALID_ARG for a key that is not a plain relative path, or more than {@link MAX_MODEL_OBJECTS} objects; INTERNAL when listing fails
   */
  private async listing(name: string): Promise<ModelListing> {
    const prefix = `${this.root}${name}/`;
    const objects: ListedObject[] = [];
    const directories: string[] = [];
    for await (const page of this.store.objects(prefix)) {
      for (const o of page) {
        const rel = o.key.slice(prefix.length);
        if (rel === '') continue;
        const isMarker = rel.endsWith('/');
        const path = isMarker ? rel.slice(0, -1) : rel;
        checkObjectPath(name, path);
        if (isMarker) directories.push(path);
        else objects.push({ path, size: o.size, tag: o.tag });
        if (objects.length + directories.length > MAX_MODEL_OBJECTS) throw err.tooManyObjects(name, MAX_MODEL_OBJECTS);
      }
    }
    return { objects, directories };
  }
}

/**
 * A key's path below its model's prefix: plain components, bounded length and depth.
 * @throws TritonError INVALID_ARG naming the model and the (quoted) path
 */
function checkObjectPath(model: string, path: string): void {
  const parts = path.split('/');
  if (Buffer.byteLength(path, 'utf8') > MAX_OBJECT_PATH_BYTES || parts.length > MAX_OBJECT_DEPTH || parts.some((p) => modelNameProblem(p) !== undefined)) {
    throw err.objectKeyNotPlain(model, JSON.stringify(path.slice(0, 200)));
  }
}
