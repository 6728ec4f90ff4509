/**
 * A second tier of the wasmtime compile cache shared by every replica of a fleet (DESIGN
 * "Multi-tenancy": tenant state in stores a fleet already runs): a replica that has never seen a
 * component takes the precompiled entry another replica stored, instead of compiling it again.
 *
 * An entry is native code, so it is trusted exactly as a local one is: its name carries the keyed
 * MAC of its bytes (./cache.ts), checked by the addon over the very file wasmtime maps. Sharing
 * therefore needs every replica to hold the same cache key (`--wasm-cache-key-file`, e.g. a
 * Kubernetes Secret); anyone who can write to the store but does not hold the key (a tenant never
 * does) can only make entries that fail their check and are compiled again.
 */

/** An entry as stored: its cache file name (`<sha256>-<config 16>-<MAC 64>.cwasm`) and its bytes. */
export interface RemoteEntry {
  readonly name: string;
  readonly bytes: Uint8Array;
}

/** Where entries are shared. Both calls never reject: a failure is a miss (logged by the implementation). */
export interface RemoteCompileCache {
  /** An entry whose name starts with `prefix` (`<sha256>-<config 16>-`), at most `maxBytes` long, or undefined. */
  fetch(prefix: string, maxBytes: number): Promise<RemoteEntry | undefined>;
  /** Store an entry (best effort). */
  store(entry: RemoteEntry): Promise<void>;
}
