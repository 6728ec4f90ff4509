/**
 * Where one ONNX Runtime run goes: the instance's worker thread, or inline on the event loop.
 *
 * A thread hop costs two wake-ups and two structured clones per run (measured on `simple`: a run
 * of ~14 µs inline became ~40-140 µs of round trip through a worker on a busy 2-core machine, and
 * HTTP throughput fell), so runs that are cheaper than the hop are better done inline; anything
 * longer must leave the event loop. The placement learns, per instance, the largest input size at
 * which the model has computed in under `inlineMaxUs`, and sends a run inline only at or below that
 * size. A slow inline run lowers the size again, so a large or unexpectedly slow input costs the
 * loop at most one run of about that size before runs of that size move to the worker.
 */
export class RunPlacement {
  /** Largest total input size (bytes) seen computing in under `inlineMaxUs`; -1 = none yet. */
  private fastBytes = -1;

  /** @param inlineMaxUs Longest run (µs) allowed on the event loop; 0 = every run on the worker. */
  constructor(readonly inlineMaxUs: number) {}

  /** True if a run whose inputs total `inputBytes` bytes should run inline. */
  inline(inputBytes: number): boolean {
    return this.inlineMaxUs > 0 && inputBytes <= this.fastBytes;
  }

  /** Records a finished run: its total input bytes and compute time (µs), in either place. */
  record(inputBytes: number, computeUs: number): void {
    if (this.inlineMaxUs <= 0) return;
    if (computeUs < this.inlineMaxUs) {
      if (inputBytes > this.fastBytes) this.fastBytes = inputBytes;
    } else if (inputBytes <= this.fastBytes) {
      this.fastBytes = inputBytes - 1;
    }
  }
}
