/** @module Interface wasi:random/insecure@0.2.12 **/
export function getInsecureRandomBytes(len: bigint): Uint8Array;
export function getInsecureRandomU64(): bigint;
