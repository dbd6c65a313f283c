import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeRouter, fakeTimers } from "./fakes.test.support.js";
import { RetryingRequest } from "./retrying-request.js";
import type { TimerQueue } from "./timers.js";

const POLICY = { windowMs: 5_000, intervalMs: 200 };

describe("RetryingRequest", () => {
  let router: FakeRouter;
  let timers: TimerQueue;
  let outcomes: Array<Error | undefined>;

  beforeEach(() => {
    vi.useFakeTimers();
    router = new FakeRouter();
    timers = fakeTimers();
    outcomes = [];
  });
  afterEach(() => {
    timers.stop();
    vi.useRealTimers();
  });

  const release = () =>
    new RetryingRequest(
      router,
      timers,
      { op: "R", key: "k", token: 5n, id: "k1.1" },
      POLICY,
      undefined,
      () => {},
      (_request, error) => outcomes.push(error),
    );

  it("tries another connection at once after the first dropped one, then waits the retry interval", async () => {
    release();
    router.lose(router.last(), true, new Error("reset"));
    expect(router.sent).toHaveLength(2);
    router.lose(router.last(), true, new Error("reset"));
    expect(router.sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(POLICY.intervalMs);
    expect(router.sent).toHaveLength(3);
  });

  it("goes to another node at once when its connection was superseded by a new active", async () => {
    const request = release();
    router.supersede(router.last());
    router.supersede(router.last());
    expect(router.sent).toHaveLength(3);
    router.reply(router.last(), { kind: "R", key: "k", released: true });
    expect(outcomes).toEqual([undefined]);
    // The first attempt's reply was lost with its connection: it may have released the lock.
    expect(request.firstLostWriteAt).toBe(router.sent[0]!.ticket.writtenAt);
    expect(router.sent.map((sent) => sent.request.op)).toEqual(["R", "R", "R"]);
  });

  it("a pause after NO_ACTIVE ends early once an active is known, and only once", async () => {
    release();
    router.reply(router.last(), { kind: "E", op: "R", key: "k", id: "k1.1", code: "NO_ACTIVE", message: "" });
    expect(router.sent).toHaveLength(1);
    router.activeFound("10.0.0.8:7420");
    expect(router.sent).toHaveLength(2);
    router.reply(router.last(), { kind: "R", key: "k", released: true });
    expect(outcomes).toEqual([undefined]);
    await vi.advanceTimersByTimeAsync(POLICY.intervalMs);
    expect(router.sent).toHaveLength(2);
  });
});
