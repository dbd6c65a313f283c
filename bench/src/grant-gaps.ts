/**
 * How long one key could not be taken: the longest stretch between two consecutive grants of it
 * to a probe that re-acquires it as soon as it has released it. Times in ms on any one clock.
 */
export interface Gap {
  /** The grant before the stretch. */
  readonly from: number;
  /** The first grant after it. */
  readonly to: number;
}

export function gapMs(gap: Gap): number {
  return gap.to - gap.from;
}

export class GrantGaps {
  #grants = 0;
  #last: number | undefined;
  #longest: Gap | undefined;

  /** A grant at `at` (not before the previous grant's time). */
  grant(at: number): void {
    if (this.#last !== undefined && (this.#longest === undefined || at - this.#last > gapMs(this.#longest)))
      this.#longest = { from: this.#last, to: at };
    this.#last = at;
    this.#grants += 1;
  }

  get grants(): number {
    return this.#grants;
  }

  /** Undefined until there were two grants. */
  get longest(): Gap | undefined {
    return this.#longest;
  }
}
