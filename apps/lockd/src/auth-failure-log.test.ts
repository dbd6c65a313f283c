import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AuthFailureLog } from "./auth-failure-log.js";

describe("AuthFailureLog", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function logged() {
    const lines: Array<{ remote: string; failures: number }> = [];
    const log = new AuthFailureLog((fields, message) => {
      expect(message).toBe("authentication failed");
      lines.push(fields);
    }, 10_000);
    return { log, lines };
  }

  it("logs the first failure at once and the rest of the interval as one line when it ends", () => {
    const { log, lines } = logged();
    log.failed("10.0.0.9:40000");
    expect(lines).toEqual([{ remote: "10.0.0.9:40000", failures: 1 }]);
    for (let i = 0; i < 134_616; i++) log.failed(`10.0.0.9:${40001 + (i % 1000)}`);
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual([
      { remote: "10.0.0.9:40000", failures: 1 },
      { remote: "10.0.0.9:40616", failures: 134_616 },
    ]);
  });

  it("writes at most one line per interval under a steady stream, and nothing once it stops", () => {
    const { log, lines } = logged();
    for (let second = 0; second < 60; second++) {
      log.failed("10.0.0.9:1");
      vi.advanceTimersByTime(1_000);
    }
    // One at the first failure, then one as each of the six 10 s intervals ends.
    expect(lines.length).toBe(7);
    expect(lines.reduce((sum, line) => sum + line.failures, 0)).toBe(60);
    vi.advanceTimersByTime(60_000);
    expect(lines.reduce((sum, line) => sum + line.failures, 0)).toBe(60);
    expect(vi.getTimerCount()).toBe(0);
    // After a quiet interval, the next failure is logged at once again.
    log.failed("10.0.0.7:2");
    expect(lines.at(-1)).toEqual({ remote: "10.0.0.7:2", failures: 1 });
  });

  it("flushes what it counted when lockd stops", () => {
    const { log, lines } = logged();
    log.failed("a:1");
    log.failed("b:2");
    log.flush();
    expect(lines).toEqual([
      { remote: "a:1", failures: 1 },
      { remote: "b:2", failures: 1 },
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
