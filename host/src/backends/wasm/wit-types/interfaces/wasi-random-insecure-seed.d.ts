/** @module Interface wasi:random/insecure-seed@0.2.12 **/
export function insecureSeed(): [bigint, bigint];
