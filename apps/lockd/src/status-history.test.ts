import { describe, expect, it } from "vitest";
import { StatusHistory } from "./status-history.js";

function counters() {
  const values = { grants: 0, replicatedGrants: 0, handoffs: 0, keysHeld: 0, waiters: 0 };
  const source = {
    grants: () => values.grants,
    replicatedGrants: () => values.replicatedGrants,
    handoffs: () => values.handoffs,
    keysHeld: () => values.keysHeld,
    waiters: () => values.waiters,
  };
  return { values, source };
}

describe("StatusHistory", () => {
  it("turns counter samples into per-second rates, oldest first, with wall-clock times", () => {
    const { values, source } = counters();
    const history = new StatusHistory(source, 3);
    history.sample(0, 10_000);
    values.grants = 50;
    values.handoffs = 10;
    values.keysHeld = 7;
    history.sample(1_000, 11_000);
    values.grants = 150;
    values.waiters = 2;
    // Two seconds between samples (a late timer): the rate is per second, not per sample.
    history.sample(3_000, 13_000);
    expect(history.points()).toEqual([
      {
        at: 11_000,
        grantsPerSecond: 50,
        replicatedGrantsPerSecond: 0,
        handoffsPerSecond: 10,
        keysHeld: 7,
        waiters: 0,
      },
      {
        at: 13_000,
        grantsPerSecond: 50,
        replicatedGrantsPerSecond: 0,
        handoffsPerSecond: 0,
        keysHeld: 7,
        waiters: 2,
      },
    ]);
  });

  it("on a standby, charts the active's grants it replicated; after a promotion its own: one history", () => {
    const { values, source } = counters();
    const history = new StatusHistory(source, 10);
    history.sample(0, 0);
    values.replicatedGrants = 40;
    values.keysHeld = 12;
    history.sample(1_000, 1_000);
    // Promoted: the replicated count stops, its own grants start; the earlier seconds stay.
    values.grants = 30;
    history.sample(2_000, 2_000);
    expect(history.points().map((point) => [point.grantsPerSecond, point.replicatedGrantsPerSecond])).toEqual(
      [
        [0, 40],
        [30, 0],
      ],
    );
    expect(history.points()[0]!.keysHeld).toBe(12);
  });

  it("keeps only the last `capacity` points", () => {
    const { values, source } = counters();
    const history = new StatusHistory(source, 3);
    for (let second = 0; second <= 10; second++) {
      values.grants = second * second;
      history.sample(second * 1000, second * 1000);
    }
    expect(history.points().map((point) => [point.at, point.grantsPerSecond])).toEqual([
      [8_000, 15],
      [9_000, 17],
      [10_000, 19],
    ]);
  });

  it("reports grants per second over the last window for /status", () => {
    const { values, source } = counters();
    const history = new StatusHistory(source);
    expect(history.grantsPerSecond(0)).toBe(0);
    for (let second = 0; second <= 20; second++) {
      values.grants = second * 100;
      history.sample(second * 1000, second * 1000);
    }
    values.grants += 50;
    expect(history.grantsPerSecond(20_500, 10)).toBe(Math.round(((2050 - 1100) / 9.5) * 10) / 10);
  });
});
