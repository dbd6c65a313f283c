import type { HolderState } from "@lock/client";
import { EXCLUSIVE, permits, SHARED } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { WatchChecks } from "./watch-checks.js";

const issued = new Map<bigint, string>([
  [10n, "k"],
  [11n, "k"],
  [12n, "k"],
  [20n, "other"],
]);

function checks(promotedAfter = new Set<bigint>()) {
  const failures: string[] = [];
  const tokens = {
    granted: (token: bigint, key: string) => issued.get(token) === key,
    mayBeLost: (token: bigint) => promotedAfter.has(token),
  };
  const watch = new WatchChecks(tokens, (what) => failures.push(what));
  return { watch, failures };
}

const held = (token: bigint, mode = EXCLUSIVE, holders = 1): HolderState => ({
  key: "k",
  held: true,
  token,
  mode,
  holders,
});
const free: HolderState = { key: "k", held: false, token: 0n, mode: undefined, holders: 0 };

describe("WatchChecks", () => {
  it("passes real states whose exclusive tokens never go down", () => {
    const { watch, failures } = checks();
    for (const state of [free, held(10n), free, held(11n, SHARED, 2), held(10n, SHARED, 1), held(12n)])
      watch.told("w0", state);
    expect(failures).toEqual([]);
    expect(watch.counts).toEqual({ told: 6, held: 4, rollbacks: 0 });
  });

  it("fails a token no node granted for the key, and impossible holder counts", () => {
    const { watch, failures } = checks();
    const wrong = [
      held(20n),
      held(99n),
      held(10n, EXCLUSIVE, 2),
      held(11n, permits(2), 3),
      { ...free, token: 5n },
    ];
    // One watcher each: no state is judged against another's tokens.
    for (const [i, state] of wrong.entries()) watch.told(`w${i}`, state);
    expect(failures).toHaveLength(wrong.length);
  });

  it("fails an exclusive token below one the watcher was told before, per watcher", () => {
    const { watch, failures } = checks();
    watch.told("w0", held(12n));
    watch.told("w1", held(10n));
    watch.told("w0", held(11n));
    expect(failures).toEqual([
      expect.stringContaining("w0 was told k held 11 exclusive by 1: below the token 12"),
    ]);
  });

  it("lets a token go down only after a failover that may have lost the higher grant", () => {
    const { watch, failures } = checks(new Set([12n]));
    watch.told("w0", held(12n));
    watch.told("w0", held(11n));
    // From there on, tokens go up again from the new active's state.
    watch.told("w0", held(12n));
    expect(failures).toEqual([]);
    expect(watch.counts.rollbacks).toBe(1);
  });

  it("compares the last state with the active's", () => {
    const { watch } = checks();
    const state = { token: 12n, mode: EXCLUSIVE, holders: 1 };
    expect(watch.finalMismatch("w0", "k", state, state)).toBeUndefined();
    expect(watch.finalMismatch("w0", "k", state, { token: 0n, mode: undefined, holders: 0 })).toMatch(
      /^w0's last state of k is held 12 exclusive by 1, the active's is free/,
    );
    expect(watch.finalMismatch("w0", "k", undefined, state)).toMatch(/is none/);
  });
});
