/**
 * Response order on a `ModelStreamInfer` stream. Triton writes the response of a non-decoupled
 * request only once every earlier request on the same stream has been answered, so a client that
 * streams requests reads the answers in the order it sent them even when model instances finish
 * out of order (Triton's gRPC stream handler keeps its request states in a queue and writes from
 * its front). A decoupled model's responses are written as they are produced; its requests take
 * no place in the order.
 *
 * Each request reserves a place when it arrives; its writes are deferred (as thunks, so a response
 * is encoded — and its tensors released — only when it is written) until every earlier place is
 * done.
 */
export interface InOrderPlace {
  /** Runs `write` now if every earlier place is done, otherwise when they are. */
  write(write: () => void): void;
  /** This place has written all it will: later places may go on. Idempotent. */
  done(): void;
}

export class InOrderWriter {
  private readonly places: Place[] = [];

  /** A place after every place reserved so far. */
  reserve(): InOrderPlace {
    const place = new Place(this);
    this.places.push(place);
    return place;
  }

  /** Whether `place` is at the front (every earlier place is done). */
  isFront(place: Place): boolean {
    return this.places[0] === place;
  }

  /** Drops the finished places at the front and runs the deferred writes of the new front. */
  advance(): void {
    while (this.places.length > 0) {
      const front = this.places[0]!;
      front.flush();
      if (!front.finished) return;
      this.places.shift();
    }
  }
}

class Place implements InOrderPlace {
  finished = false;
  private pending: (() => void)[] = [];

  constructor(private readonly owner: InOrderWriter) {}

  write(write: () => void): void {
    if (this.owner.isFront(this)) write();
    else this.pending.push(write);
  }

  done(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.owner.isFront(this)) this.owner.advance();
  }

  flush(): void {
    const pending = this.pending;
    this.pending = [];
    for (const write of pending) write();
  }
}
