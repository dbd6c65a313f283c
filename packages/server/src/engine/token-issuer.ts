import { composeToken, MAX_SEQUENCE } from "@lock/protocol";

/**
 * Issues fencing tokens `composeToken(epoch, sequence)`, sequence 1, 2, 3, … within an epoch.
 *
 * Every token is greater than every earlier one as long as each epoch is greater than every epoch
 * used before it, anywhere in the cluster. The epoch is persisted once (when it is taken), never per
 * grant: that is the whole point of the layout. When a sequence runs out (2^24 grants, over a minute
 * at lockd's top rate) the issuer asks `renewEpoch` for a fresh, persisted epoch.
 */
export class TokenIssuer {
  #epoch: bigint;
  /** `composeToken(epoch, 0)`, range-checked once per epoch; a grant only adds its sequence. */
  #base: bigint;
  #sequence = 0n;
  readonly #renewEpoch: () => bigint;
  readonly #maxSequence: bigint;

  /** `maxSequence` is the layout's 2^24 - 1; tests lower it to reach renewal quickly. */
  constructor(epoch: bigint, renewEpoch: () => bigint, maxSequence: bigint | number = MAX_SEQUENCE) {
    if (BigInt(maxSequence) > MAX_SEQUENCE) throw new RangeError(`maxSequence is above ${MAX_SEQUENCE}`);
    this.#base = composeToken(epoch, 0n);
    this.#epoch = epoch;
    this.#renewEpoch = renewEpoch;
    this.#maxSequence = BigInt(maxSequence);
  }

  get epoch(): bigint {
    return this.#epoch;
  }

  /** The most recent token issued in this epoch, or undefined if none yet. */
  get lastIssued(): bigint | undefined {
    return this.#sequence === 0n ? undefined : this.#base + this.#sequence;
  }

  next(): bigint {
    if (this.#sequence >= this.#maxSequence) this.moveToEpoch(this.#renewEpoch());
    // The sequence never passes maxSequence (at most the layout's), so this is composeToken's value.
    this.#sequence += 1n;
    return this.#base + this.#sequence;
  }

  /** Switches to a new epoch (promotion, or renewal); it must exceed the current one. */
  moveToEpoch(epoch: bigint): void {
    if (epoch <= this.#epoch) throw new RangeError(`epoch must increase (${this.#epoch} -> ${epoch})`);
    this.#base = composeToken(epoch, 0n);
    this.#epoch = epoch;
    this.#sequence = 0n;
  }
}
