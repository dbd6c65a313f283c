import { MAX_SEQUENCE, SEQUENCE_BITS } from "@lock/protocol";

/**
 * Issues fencing tokens `epoch × 2^40 + sequence`, sequence 1, 2, 3, … within an epoch.
 *
 * Every token is greater than every earlier one as long as each epoch is greater than every epoch
 * used before it, anywhere in the cluster. The epoch is persisted once (when it is taken), never per
 * grant: that is the whole point of the layout. When a sequence runs out (2^40 grants, about 12 days
 * at a million grants a second) the issuer asks `renewEpoch` for a fresh, persisted epoch.
 */
export class TokenIssuer {
  #epoch: bigint;
  #base: bigint;
  #sequence = 0;
  readonly #renewEpoch: () => bigint;
  readonly #maxSequence: number;

  /** `maxSequence` is the layout's 2^40 - 1; tests lower it to reach renewal quickly. */
  constructor(epoch: bigint, renewEpoch: () => bigint, maxSequence = Number(MAX_SEQUENCE)) {
    this.#epoch = epoch;
    this.#base = epoch << BigInt(SEQUENCE_BITS);
    this.#renewEpoch = renewEpoch;
    this.#maxSequence = maxSequence;
  }

  get epoch(): bigint {
    return this.#epoch;
  }

  /** The most recent token issued in this epoch, or undefined if none yet. */
  get lastIssued(): bigint | undefined {
    return this.#sequence === 0 ? undefined : this.#base + BigInt(this.#sequence);
  }

  next(): bigint {
    if (this.#sequence >= this.#maxSequence) this.moveToEpoch(this.#renewEpoch());
    this.#sequence += 1;
    return this.#base + BigInt(this.#sequence);
  }

  /** Switches to a new epoch (promotion, or renewal); it must exceed the current one. */
  moveToEpoch(epoch: bigint): void {
    if (epoch <= this.#epoch) throw new RangeError(`epoch must increase (${this.#epoch} -> ${epoch})`);
    this.#epoch = epoch;
    this.#base = epoch << BigInt(SEQUENCE_BITS);
    this.#sequence = 0;
  }
}
