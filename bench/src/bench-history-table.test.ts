import { describe, expect, it } from "vitest";
import type { HistoryEntry } from "./bench-history.js";
import { historyTable, README_END, README_START, withHistorySection } from "./bench-history-table.js";

function entry(commit: string, date: string, redisRatio: number, dirty = false): HistoryEntry {
  return {
    date,
    commit,
    dirty,
    node: "v22.23.5",
    load: { start: [0.25, 0, 0], end: [1.5, 0, 0] },
    pinning: {},
    durationMs: 2000,
    rounds: 5,
    figures: [
      // Out of order on purpose: the table orders by figure, then lockd, redis, postgres, etcd.
      { system: "redis", figure: "cycle_p50_sequential", unit: "ms", value: 0.06, ratio: 1.2 },
      { system: "redis", figure: "cycles_1024", unit: "/s", value: 50_000, ratio: redisRatio },
      { system: "lockd", figure: "cycles_1024", unit: "/s", value: 120_000.4, ratio: null },
      { system: "lockd", figure: "cycle_p50_sequential", unit: "ms", value: 0.05, ratio: null },
    ],
  };
}

describe("historyTable", () => {
  it("shows the last runs newest first, a row per figure and system, value and ratio in each cell", () => {
    const history = [
      entry("0000000aaaaaaa", "2026-12-01T09:00:00.000Z", 2.9),
      entry("1111111bbbbbbb", "2026-12-02T09:00:00.000Z", 2.5),
      entry("2222222ccccccc", "2026-12-03T09:00:00.000Z", 2.4, true),
    ];
    expect(historyTable(history, 2)).toBe(
      [
        "| figure | system | 2026-12-03 2222222c+ | 2026-12-02 1111111b |",
        "|---|---|---|---|",
        "| cycles_1024 | lockd | 120,000/s | 120,000/s |",
        "| cycles_1024 | redis | 50,000/s (2.40×) | 50,000/s (2.50×) |",
        "| cycle_p50_sequential | lockd | 0.050 ms | 0.050 ms |",
        "| cycle_p50_sequential | redis | 0.060 ms (1.20×) | 0.060 ms (1.20×) |",
        "| load avg (1 min), start → end | | 0.25 → 1.50 | 0.25 → 1.50 |",
        "",
      ].join("\n"),
    );
  });

  it("leaves a cell empty for a figure a run did not have, and says so when nothing is recorded", () => {
    const older = { ...entry("aaaaaaaa", "2026-12-01T09:00:00.000Z", 2), figures: [] };
    const table = historyTable([older, entry("bbbbbbbb", "2026-12-02T09:00:00.000Z", 2)]);
    expect(table).toContain("| cycles_1024 | redis | 50,000/s (2.00×) |  |");
    const nothing = entry("cccccccc", "2026-12-03T09:00:00.000Z", 2);
    const measuredNothing = {
      ...nothing,
      figures: [{ system: "etcd", figure: "cycles_1024", unit: "/s", value: 0, ratio: null }],
    };
    expect(historyTable([measuredNothing])).toContain("| cycles_1024 | etcd | 0/s (n/a) |");
    expect(historyTable([])).toMatch(/^No figures recorded yet/);
  });
});

describe("withHistorySection", () => {
  it("replaces only what lies between the markers", () => {
    const readme = `# Benchmarks\n\n${README_START}\nold table\n${README_END}\n\nafter\n`;
    expect(withHistorySection(readme, "new table\n")).toBe(
      `# Benchmarks\n\n${README_START}\nnew table\n${README_END}\n\nafter\n`,
    );
  });

  it("throws when the README has no section", () => {
    expect(() => withHistorySection("# Benchmarks\n", "table\n")).toThrow(README_START);
  });
});
