import { describe, expect, it } from "vitest";
import {
  dropWarning,
  type FigureRecord,
  type HistoryEntry,
  historyAppend,
  parseHistory,
  ratioDrops,
} from "./bench-history.js";

function entry(commit: string, figures: FigureRecord[], date = "2026-12-03T10:00:00.000Z"): HistoryEntry {
  return {
    date,
    commit,
    dirty: false,
    node: "v22.23.5",
    load: { start: [0.5, 0.4, 0.3], end: [1.5, 0.8, 0.4] },
    pinning: { throughput: "server cpu 0, load cpu 1" },
    durationMs: 2000,
    rounds: 5,
    figures,
  };
}

const ratio = (system: string, figure: string, value: number | null): FigureRecord => ({
  system,
  figure,
  unit: "/s",
  value: 1000,
  ratio: value,
});

describe("history file", () => {
  it("appends one line per run and parses them back in order", () => {
    const first = entry("aaa", [ratio("redis", "cycles_1024", 2.5)]);
    const second = entry("bbb", [ratio("redis", "cycles_1024", 2.4)]);
    let text = "";
    text += historyAppend(text, first);
    text += historyAppend(text, second);
    expect(text.split("\n")).toHaveLength(3); // two lines and the final newline
    expect(parseHistory(text)).toEqual([first, second]);
  });

  it("starts a new line when the file's last line has no newline, and skips blank lines", () => {
    const text = JSON.stringify(entry("aaa", []));
    const appended = text + historyAppend(text, entry("bbb", []));
    expect(parseHistory(`${appended}\n\n`).map((found) => found.commit)).toEqual(["aaa", "bbb"]);
  });

  it("names the line that is not an entry", () => {
    const good = JSON.stringify(entry("aaa", []));
    expect(() => parseHistory(`${good}\n{oops\n`)).toThrow("history line 2: not JSON");
    expect(() => parseHistory(`${good}\n{"date":"x"}\n`)).toThrow("history line 2: not a bench:all entry");
  });

  it("keeps a value measured as nothing as null (JSON has no NaN)", () => {
    const text = historyAppend(
      "",
      entry("aaa", [{ ...ratio("etcd", "cycles_1024", Number.NaN), value: null }]),
    );
    expect(parseHistory(text)[0]!.figures[0]).toMatchObject({ value: null, ratio: null });
  });
});

describe("ratioDrops", () => {
  const history = [
    entry(
      "old",
      [ratio("redis", "cycles_1024", 4), ratio("etcd", "cycles_64", 50)],
      "2026-12-01T00:00:00.000Z",
    ),
    entry(
      "last",
      [ratio("redis", "cycles_1024", 2), ratio("lockd", "cycles_1024", null)],
      "2026-12-02T00:00:00.000Z",
    ),
  ];

  it("warns when a ratio is more than 10 % below the last recorded one for the same system and figure", () => {
    const drops = ratioDrops(history, [ratio("redis", "cycles_1024", 1.79)]);
    expect(drops).toEqual([
      {
        system: "redis",
        figure: "cycles_1024",
        ratio: 1.79,
        previous: 2,
        previousDate: "2026-12-02T00:00:00.000Z",
        previousCommit: "last",
      },
    ]);
    expect(dropWarning(drops[0]!)).toBe(
      "WARNING cycles_1024 (acquire+release cycles, 1024 in flight) vs redis: ratio 1.790, 10.5 % below the last recorded 2.000 (2026-12-02, last)",
    );
  });

  it("does not warn at exactly 10 % below, nor above it, nor on a rise", () => {
    for (const value of [1.8, 1.85, 2, 3])
      expect(ratioDrops(history, [ratio("redis", "cycles_1024", value)])).toEqual([]);
  });

  it("compares with the last entry that has the figure, not an older one", () => {
    // 3.5 is far below the older 4 but above the last 2: no warning.
    expect(ratioDrops(history, [ratio("redis", "cycles_1024", 3.5)])).toEqual([]);
    // etcd's cycles_64 was recorded only in the older entry: that is its last.
    expect(ratioDrops(history, [ratio("etcd", "cycles_64", 44)])).toHaveLength(1);
  });

  it("skips lockd's own rows, figures never recorded, ratios measured as nothing, and an empty history", () => {
    const current = [
      ratio("lockd", "cycles_1024", null),
      ratio("postgres", "cycles_1024", 0.1),
      ratio("redis", "cycles_1024", Number.NaN),
    ];
    expect(ratioDrops(history, current)).toEqual([]);
    expect(ratioDrops([], [ratio("redis", "cycles_1024", 0.1)])).toEqual([]);
  });
});
