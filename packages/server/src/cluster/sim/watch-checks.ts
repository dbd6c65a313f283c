import type { HolderState } from "@lock/client";
import { tokenEpoch } from "@lock/protocol";
import { type HolderSummary, sameSummary } from "../../engine/holder-summary.js";

/** What the watch checks need of the run's history: who was granted which token of which key. */
export interface IssuedTokens {
  /** Whether a node granted `key` with `token` (alone, or as one of a bundle's keys). */
  granted(token: bigint, key: string): boolean;
  /** Whether the grant of `token` may be unknown to the active now: after a failover or in a partition (history.ts). */
  mayBeLost(token: bigint): boolean;
}

/**
 * The checks of watching a key (docs/protocol.md, "Watching a key") on what the simulator's watchers
 * were told (sim-watcher.ts):
 *
 * - every state was a real state of the key: free, or held with a token a node granted for that key,
 *   by one holder if exclusive, by at most the semaphore's limit if permits;
 * - the tokens a watcher sees for a key never go down: an exclusive holder's token is at least every
 *   token it was told of that key before (a shared key's newest holder may leave first, so its token
 *   may go down; the next exclusive grant is above all of them again). Except when the higher grant
 *   may be unknown to the active the watcher now watches: a node promoted after it (the newest grants
 *   of an active that dies), it was granted while two nodes served, or the two tokens are of two
 *   epochs (two actives that did not hear each other, whose grants interleave; docs/consistency.md).
 *   The watcher is then told that active's state (counted as `rollbacks`). Within one epoch and
 *   without a failover, a lower token is a bug;
 * - after the last event, each watcher's last state of each key equals the active's (`finalCheck`).
 */
export class WatchChecks {
  readonly #issued: IssuedTokens;
  readonly #fail: (what: string) => void;
  /** Per watcher and key, the highest token told so far. */
  readonly #highest = new Map<string, bigint>();
  readonly counts = { told: 0, held: 0, rollbacks: 0 };

  constructor(issued: IssuedTokens, fail: (what: string) => void) {
    this.#issued = issued;
    this.#fail = fail;
  }

  failed(what: string): void {
    this.#fail(what);
  }

  told(watcher: string, state: HolderState): void {
    this.counts.told += 1;
    const { key, token, mode, holders } = state;
    const shown = `${watcher} was told ${key} ${show(state)}`;
    if (!state.held) {
      if (token !== 0n || mode !== undefined || holders !== 0) this.#fail(`${shown}: not a free state`);
      return;
    }
    this.counts.held += 1;
    if (!this.#issued.granted(token, key)) this.#fail(`${shown}: no node granted ${key} that token`);
    if (mode?.kind === "exclusive" && holders !== 1)
      this.#fail(`${shown}: an exclusive key with ${holders} holders`);
    if (mode?.kind === "permit" && holders > mode.limit) this.#fail(`${shown}: more holders than permits`);
    const id = `${watcher} ${key}`;
    const highest = this.#highest.get(id) ?? 0n;
    if (mode?.kind === "exclusive" && token < highest) {
      const explained = this.#issued.mayBeLost(highest) || tokenEpoch(token) !== tokenEpoch(highest);
      if (!explained)
        this.#fail(
          `${shown}: below the token ${highest} it was told before, which no failover or partition lost`,
        );
      this.counts.rollbacks += 1;
      this.#highest.set(id, token);
    } else if (token > highest) this.#highest.set(id, token);
  }

  /** After the last event: why `last` (what a watcher was told last) is not `actual` (the active's), if it is not. */
  finalMismatch(
    watcher: string,
    key: string,
    last: HolderSummary | undefined,
    actual: HolderSummary,
  ): string | undefined {
    if (last !== undefined && sameSummary(last, actual)) return undefined;
    return `${watcher}'s last state of ${key} is ${last ? show(last) : "none"}, the active's is ${show(actual)}`;
  }
}

function show(state: HolderSummary): string {
  if (state.mode === undefined) return `free (token ${state.token}, ${state.holders} holders)`;
  const mode = state.mode.kind === "permit" ? `p${state.mode.limit}` : state.mode.kind;
  return `held ${state.token} ${mode} by ${state.holders}`;
}
