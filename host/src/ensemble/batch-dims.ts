/**
 * The batch dimension between an ensemble and its steps (spec §5.6): a tensor made by a
 * non-batching model (or given to a non-batching ensemble) that goes to a batching model gets a
 * leading batch dimension of 1, and a batch-1 tensor of a batching model that goes to a
 * non-batching one loses it — Triton's `EnsembleContext::ReshapeTensorDims` (core
 * `ensemble_scheduler.cc`), used for step inputs and for the ensemble's outputs.
 */

/** Triton's `CompareDimsWithWildcard`: same rank, and each dim equal or -1 on either side. */
function matchesWithWildcard(configDims: readonly number[], shape: readonly number[]): boolean {
  if (configDims.length !== shape.length) return false;
  for (let i = 0; i < shape.length; i++) {
    const c = configDims[i]!;
    const s = shape[i]!;
    if (c !== -1 && s !== -1 && c !== s) return false;
  }
  return true;
}

/**
 * The shape a tensor takes where it is consumed.
 * @param configDims the consumer's config `dims` for it (without the batch dimension)
 * @param consumerBatches the consumer has `max_batch_size` > 0
 * @param tensorBatch the batch size of the request that made the tensor; 0 when that model (or the
 *   ensemble request) does not batch
 * @param shape the tensor's shape
 * @returns `[1, ...shape]` when the consumer batches, the producer did not, and `shape` matches
 *   `configDims`; `shape` without its first dimension when the consumer does not batch, the
 *   producer's batch was 1 and `shape` does not already match `configDims`; else `shape` itself
 *   (the consumer's own validation then judges it, as in Triton)
 */
export function reshapeTensorDims(configDims: readonly number[], consumerBatches: boolean, tensorBatch: number, shape: readonly number[]): readonly number[] {
  if (consumerBatches === (tensorBatch !== 0)) return shape;
  if (consumerBatches) return matchesWithWildcard(configDims, shape) ? [1, ...shape] : shape;
  return !matchesWithWildcard(configDims, shape) && tensorBatch === 1 ? shape.slice(1) : shape;
}
