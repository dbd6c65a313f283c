import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { composeEpoch, epochRound } from "@lock/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { EpochFile } from "../store/epoch-file.js";
import { EpochKeeper, longestHoldMs } from "./epoch-keeper.js";
import { clockRound, MAX_LEAD_ROUNDS, ROUND_ORIGIN_MS, roundStartMs } from "./epoch-plan.js";
import { EpochStoreError, MemoryEpochStore } from "./epoch-store.js";

const NOW = ROUND_ORIGIN_MS + 5_000_000_000;
const keeper = (store: MemoryEpochStore, wallNow = () => NOW) =>
  new EpochKeeper({ store, nodeId: 1, wallNow, maxClockSkewMs: 500 });

describe("EpochKeeper", () => {
  it("stores an epoch it hears of before it reports it, and only when it is a new highest", () => {
    const store = new MemoryEpochStore();
    const epochs = keeper(store);
    const later = composeEpoch(clockRound(NOW) + 3n, 0);
    expect(epochs.learn(later)).toBe("raised");
    expect(store.epoch).toBe(later);
    expect(epochs.learn(later)).toBe("known");
    expect(epochs.learn(later - 1n)).toBe("known");
    expect(store.writes).toBe(1);
  });

  it("starts above everything it ever heard of, not only what it took itself", () => {
    const store = new MemoryEpochStore();
    const heard = composeEpoch(clockRound(NOW) + 1n, 0);
    keeper(store).learn(heard);
    const restarted = keeper(store);
    expect(restarted.highest).toBe(heard);
    expect(restarted.take(true).epoch).toBeGreaterThan(heard);
  });

  it("does not believe an epoch more than a day ahead of its clock: not stored, reported", () => {
    const store = new MemoryEpochStore();
    const epochs = keeper(store);
    expect(epochs.learn(composeEpoch(clockRound(NOW) + 100_000n, 0))).toBe("implausible");
    expect(store.writes).toBe(0);
    expect(epochs.highest).toBe(0n);
  });

  it("refuses to start on a stored epoch a day ahead of its clock (a wrong clock), naming the store", () => {
    const store = new MemoryEpochStore(composeEpoch(clockRound(NOW) + 200_000n, 0));
    expect(() => keeper(store)).toThrow(EpochStoreError);
    expect(() => keeper(store)).toThrow(/memory holds epoch .* days ahead/);
  });

  it("never holds a node for longer than one lone-start wait, whatever the stored round", () => {
    const store = new MemoryEpochStore(composeEpoch(clockRound(NOW) + 3_600n, 0));
    const plan = keeper(store).take(true);
    expect(epochRound(plan.epoch)).toBe(clockRound(NOW) + 3_600n); // node 1 above node 0 in that round
    expect(plan.serveFromMs - NOW).toBeLessThanOrEqual(longestHoldMs(500));
    expect(longestHoldMs(500)).toBe(2 * 500 + 4_000);
  });

  it("reports an epoch taken further ahead of the clock than a hold covers, until the clock catches up", () => {
    let now = NOW;
    const store = new MemoryEpochStore(composeEpoch(clockRound(NOW) + 3_600n, 0));
    const epochs = keeper(store, () => now);
    expect(epochs.aheadOfClock()).toBeUndefined();
    const plan = epochs.take(true);
    const ahead = epochs.aheadOfClock();
    expect(ahead).toEqual({
      epoch: plan.epoch,
      takenAtMs: NOW,
      servesFromMs: plan.serveFromMs,
      clockCatchesUpMs: roundStartMs(clockRound(NOW) + 3_600n - MAX_LEAD_ROUNDS),
    });
    now = ahead!.clockCatchesUpMs;
    expect(epochs.aheadOfClock()).toBeUndefined();
  });

  it("does not report a lone start, whose hold covers its lead", () => {
    const epochs = keeper(new MemoryEpochStore());
    epochs.take(false);
    expect(epochs.taken!.servesFromMs).toBe(epochs.taken!.clockCatchesUpMs);
    expect(epochs.aheadOfClock()).toBeUndefined();
  });
});

describe("EpochFile", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), "epoch-file-"));
    dirs.push(dir);
    return new EpochFile(dir);
  };

  it("round-trips an epoch durably, in the format earlier versions wrote", () => {
    const file = fresh();
    expect(file.read()).toBe(0n);
    file.write(1234n);
    expect(readFileSync(file.path, "utf8")).toBe('{"epoch":"1234"}\n');
    expect(file.read()).toBe(1234n);
  });

  it.each([
    ["", "empty"],
    ["null\n", "null"],
    ['{"epoch":"12', "truncated"],
    ['{"epoch":12}', "a number"],
    ['{"epoch":"1099511627776"}', "beyond 40 bits"],
  ])("refuses %j (%s) with an error naming the file", (text) => {
    const file = fresh();
    writeFileSync(file.path, text);
    expect(() => file.read()).toThrow(EpochStoreError);
    expect(() => file.read()).toThrow(file.path);
  });

  it("refuses to write an epoch beyond the layout", () => {
    expect(() => fresh().write(1n << 40n)).toThrow(RangeError);
  });
});
