import { describe, expect, it } from "vitest";
import { SilenceWatch } from "./silence-watch.js";

const TIMEOUT = 250;

describe("SilenceWatch", () => {
  it("has nothing to watch while nothing is owed", () => {
    const watch = new SilenceWatch(TIMEOUT, 0);
    expect(watch.nextCheckAt()).toBeUndefined();
    expect(watch.check(10_000)).toBe("fine");
  });

  it("reports a connection silent once a prompt request has had no byte back for the timeout, once", () => {
    const watch = new SilenceWatch(TIMEOUT, 0);
    watch.sent(true, 1_000);
    expect(watch.nextCheckAt()).toBe(1_000 + TIMEOUT);
    expect(watch.check(1_000 + TIMEOUT - 1)).toBe("fine");
    expect(watch.check(1_000 + TIMEOUT)).toBe("silent");
    expect(watch.silent).toBe(true);
    // Reported once: the owner acts on it; nothing more until the server speaks.
    expect(watch.nextCheckAt()).toBeUndefined();
    expect(watch.check(5_000)).toBe("fine");
    expect(watch.received(5_001)).toBe(true);
    expect(watch.silent).toBe(false);
    expect(watch.received(5_002)).toBe(false);
    // Still owed: silent again if the server goes quiet again.
    expect(watch.nextCheckAt()).toBe(5_002 + TIMEOUT);
  });

  it("counts silence from the last byte received, so a busy connection is never silent", () => {
    const watch = new SilenceWatch(TIMEOUT, 0);
    watch.sent(true, 1_000);
    for (let now = 1_100; now < 3_000; now += 100) {
      watch.sent(true, now);
      watch.received(now);
      watch.settled(true);
      expect(watch.check(now + 50)).toBe("fine");
    }
    // The first request is still unanswered, and the server has gone quiet since 2 900.
    expect(watch.nextCheckAt()).toBe(2_900 + TIMEOUT);
    expect(watch.check(2_900 + TIMEOUT - 1)).toBe("fine");
    expect(watch.check(2_900 + TIMEOUT)).toBe("silent");
  });

  it("forgets a prompt request once it is answered or taken back", () => {
    const watch = new SilenceWatch(TIMEOUT, 0);
    watch.sent(true, 1_000);
    watch.settled(true);
    expect(watch.nextCheckAt()).toBeUndefined();
    expect(watch.check(10_000)).toBe("fine");
  });

  it("lets acquires wait in silence, pinging a connection that carries only them once it is quiet", () => {
    const watch = new SilenceWatch(TIMEOUT, 0);
    watch.sent(false, 1_000);
    watch.received(1_010);
    expect(watch.nextCheckAt()).toBe(1_010 + TIMEOUT);
    expect(watch.check(1_100)).toBe("fine");
    expect(watch.check(1_010 + TIMEOUT)).toBe("ping");
    // The ping is owed promptly: unanswered, the connection is silent one timeout after it.
    watch.sent(true, 1_010 + TIMEOUT);
    expect(watch.nextCheckAt()).toBe(1_010 + 2 * TIMEOUT);
    expect(watch.check(1_010 + 2 * TIMEOUT - 1)).toBe("fine");
    expect(watch.check(1_010 + 2 * TIMEOUT)).toBe("silent");
  });

  it("a ping answered in time keeps a waiting connection fine", () => {
    const watch = new SilenceWatch(TIMEOUT, 0);
    watch.sent(false, 0);
    expect(watch.check(TIMEOUT)).toBe("ping");
    watch.sent(true, TIMEOUT);
    watch.received(TIMEOUT + 1);
    watch.settled(true);
    expect(watch.nextCheckAt()).toBe(2 * TIMEOUT + 1);
    expect(watch.check(2 * TIMEOUT)).toBe("fine");
  });
});
