import { type ErrorCode, EXCLUSIVE, type Reply } from "@lock/protocol";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type AcquireContext, AcquireOp, type AcquireSpec, REPLY_GRACE_MS } from "./acquire.js";
import {
  AbortError,
  AuthError,
  LockServerError,
  LockTimeoutError,
  NoServerError,
  ProtocolError,
} from "./errors.js";
import { FakeRouter, fakeTimers } from "./fakes.test.support.js";
import { MAX_REDIRECTS } from "./retrying-request.js";
import type { TimerQueue } from "./timers.js";

interface Granted {
  readonly token: bigint;
  readonly leaseStartBound: number;
}

const SPEC: AcquireSpec = {
  mode: "A",
  lockMode: EXCLUSIVE,
  key: "orders:42",
  leaseMs: 30_000,
  waitMs: 0,
  id: "k1.1",
  waitForReady: false,
};
const RETRY_INTERVAL = 200;

describe("AcquireOp", () => {
  let router: FakeRouter;
  let timers: TimerQueue;
  let unwanted: Array<[string, bigint]>;
  let probed: Array<[string, string]>;
  let retries: number[];
  let finished: number;
  /** What the jitter of waitForReady's pauses draws, in turn (then 0.5). */
  let draws: number[];
  let ctx: AcquireContext<Granted>;

  beforeEach(() => {
    vi.useFakeTimers();
    router = new FakeRouter();
    timers = fakeTimers();
    unwanted = [];
    probed = [];
    retries = [];
    finished = 0;
    draws = [];
    ctx = {
      router,
      timers,
      retryIntervalMs: RETRY_INTERVAL,
      random: () => draws.shift() ?? 0.5,
      granted: (_op, token, leaseStartBound) => ({ token, leaseStartBound }),
      finished: () => finished++,
      releaseUnwanted: (key, token) => unwanted.push([key, token]),
      releaseIfGranted: (key, id) => probed.push([key, id]),
      retried: (_spec, attempt) => retries.push(attempt),
    };
  });
  afterEach(() => {
    timers.stop();
    vi.useRealTimers();
  });

  function start(spec: Partial<AcquireSpec> = {}, signal?: AbortSignal): AcquireOp<Granted> {
    const op = new AcquireOp({ ...SPEC, ...spec }, ctx, signal);
    op.promise.catch(() => {});
    return op;
  }

  const grant = (token = 5n, id = SPEC.id): Reply => ({ kind: "A", key: SPEC.key, token, id });
  const errorReply = (code: ErrorCode, message = ""): Reply => ({
    kind: "E",
    op: "A",
    key: SPEC.key,
    id: SPEC.id,
    code,
    message,
  });

  /** An acquire the server has seen, aborted: returns what was sent for it. */
  async function abortedAfterWrite() {
    const controller = new AbortController();
    const op = start({}, controller.signal);
    const acquire = router.last();
    controller.abort();
    await expect(op.promise).rejects.toBeInstanceOf(AbortError);
    return acquire;
  }

  it("sends A with the key, lease, wait and its id, and resolves with the grant", async () => {
    const op = start({ waitMs: 5_000 });
    expect(router.last().request).toEqual({
      op: "A",
      key: "orders:42",
      leaseMs: 30_000,
      waitMs: 5_000,
      id: "k1.1",
    });
    const writtenAt = router.last().ticket.writtenAt;
    await vi.advanceTimersByTimeAsync(40);
    router.reply(router.last(), grant(9n));
    expect(await op.promise).toEqual({ token: 9n, leaseStartBound: writtenAt });
    expect(finished).toBe(1);
  });

  it("a bundle goes as B with its keys, re-sends B with the same id after a drop, and takes the B grant", async () => {
    const keys = ["orders:41", "orders:42"];
    const op = start({ key: keys[0]!, keys, waitMs: 5_000 });
    const first = router.last();
    expect(first.request).toEqual({ op: "B", keys, leaseMs: 30_000, waitMs: 5_000, id: "k1.1" });
    await vi.advanceTimersByTimeAsync(1_000);
    router.lose(first, true, new Error("reset"));
    const retry = router.last();
    expect(retry.request).toEqual({ ...first.request, waitMs: 4_000 });
    router.reply(retry, { kind: "B", key: keys[0]!, token: 8n, id: SPEC.id });
    expect(await op.promise).toEqual({ token: 8n, leaseStartBound: first.ticket.writtenAt });
  });

  it("a bundle whose wait ran out (T) rejects with LockTimeoutError; given up, it is cancelled by its first key", async () => {
    const keys = ["a", "b"];
    const timedOut = start({ key: "a", keys, waitMs: 100 });
    router.reply(router.last(), { kind: "T", key: "a", id: SPEC.id });
    await expect(timedOut.promise).rejects.toBeInstanceOf(LockTimeoutError);
    const controller = new AbortController();
    const aborted = start({ key: "a", keys, id: "k1.2" }, controller.signal);
    controller.abort();
    await expect(aborted.promise).rejects.toBeInstanceOf(AbortError);
    expect(router.last().request).toEqual({ op: "C", key: "a", id: "k1.2" });
  });

  it("after a dropped connection re-sends with the same id and what is left of the wait", async () => {
    const op = start({ waitMs: 5_000 });
    const first = router.last();
    await vi.advanceTimersByTimeAsync(1_000);
    router.lose(first, true, new Error("reset"));
    const retry = router.last();
    expect(retry.connection).not.toBe(first.connection);
    expect(retry.request).toEqual({ ...first.request, waitMs: 4_000 });
    expect(retries).toEqual([2]);
    await vi.advanceTimersByTimeAsync(10);
    // The server replays the grant the first attempt got: its lease began after the first write.
    router.reply(retry, grant(7n));
    expect(await op.promise).toEqual({ token: 7n, leaseStartBound: first.ticket.writtenAt });
    expect(probed).toEqual([]);
  });

  it("moves off a superseded connection at once, with the same id and the wait left, without using up a try", async () => {
    router.size = 2;
    const op = start({ waitMs: 5_000 });
    const first = router.last();
    await vi.advanceTimersByTimeAsync(600);
    router.supersede(first);
    const moved = router.last();
    expect(moved.request).toEqual({ ...first.request, waitMs: 4_400 });
    expect(retries).toEqual([2]);
    // Two moves and a drop on two connections: the drop is the first failed try, not the third.
    router.supersede(moved);
    router.lose(router.last(), true, new Error("reset"));
    expect(router.sent).toHaveLength(4);
    expect(retries).toEqual([2, 3, 4]);
    router.reply(router.last(), grant(8n));
    expect((await op.promise)?.token).toBe(8n);
    expect(probed).toEqual([]);
  });

  it("gives up after as many dropped connections as there are, and looks for an orphaned grant", async () => {
    router.size = 3;
    const op = start();
    const error = new Error("reset");
    router.lose(router.last(), true, error);
    router.lose(router.last(), true, error);
    expect(router.sent).toHaveLength(3);
    router.lose(router.last(), true, error);
    const failure = await op.promise.catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(NoServerError);
    expect((failure as Error).cause).toBe(error);
    expect(router.sent).toHaveLength(3);
    expect(probed).toEqual([[SPEC.key, SPEC.id]]);
  });

  it("fails at once when no connection is ready or opening; nothing was sent, nothing to probe", async () => {
    router.available = false;
    router.lastError = new Error("connect ECONNREFUSED");
    const op = start();
    const error = (await op.promise.catch((e: unknown) => e)) as NoServerError;
    expect(error).toBeInstanceOf(NoServerError);
    // Not "after 0 tries": nothing was tried because every connection was down.
    expect(error.message).toBe('no usable connection for "orders:42": all 2 connections are down');
    expect(error.cause).toBe(router.lastError);
    expect(probed).toEqual([]);
  });

  it("an acquire given up while its attempt is unanswered is finished only once the answer comes", async () => {
    const acquire = await abortedAfterWrite();
    expect(finished).toBe(0);
    router.reply(acquire, { kind: "T", key: SPEC.key, id: SPEC.id });
    expect(finished).toBe(1);
  });

  describe("waitForReady", () => {
    it("keeps trying while no connection is usable, every retryIntervalMs plus jitter, and takes the lock once one is", async () => {
      router.available = false;
      draws = [0, 0.99];
      const op = start({ waitMs: 5_000, waitForReady: true });
      expect(op.settled).toBe(false);
      expect(router.attempts).toBe(1);
      // The first pause drew 0: retryIntervalMs; the second drew 0.99: almost twice that.
      await vi.advanceTimersByTimeAsync(RETRY_INTERVAL - 1);
      expect(router.attempts).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(router.attempts).toBe(2);
      await vi.advanceTimersByTimeAsync(RETRY_INTERVAL + 197);
      expect(router.attempts).toBe(2);
      router.available = true;
      await vi.advanceTimersByTimeAsync(1);
      expect(router.attempts).toBe(3);
      // The same id, and only what is left of the wait.
      expect(router.last().request).toEqual({
        op: "A",
        key: SPEC.key,
        leaseMs: SPEC.leaseMs,
        waitMs: 5_000 - 598,
        id: SPEC.id,
      });
      expect(retries).toEqual([2, 3]);
      router.reply(router.last(), grant(12n));
      expect((await op.promise)?.token).toBe(12n);
    });

    it("after every connection dropped the attempt, pauses and re-sends with the same id", async () => {
      router.size = 2;
      const op = start({ waitMs: 5_000, waitForReady: true });
      router.lose(router.last(), true, new Error("reset"));
      router.lose(router.last(), true, new Error("reset"));
      expect(op.settled).toBe(false);
      expect(router.sent).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(RETRY_INTERVAL * 1.5);
      expect(router.sent).toHaveLength(3);
      expect(router.last().request).toMatchObject({ op: "A", id: SPEC.id, waitMs: 5_000 - 300 });
      router.reply(router.last(), grant(13n));
      expect((await op.promise)?.token).toBe(13n);
      // The drops left an attempt that may have been granted: the retry with the same id found it.
      expect(probed).toEqual([]);
    });

    it("fails with NoServerError, saying so, once the wait runs out with no connection usable", async () => {
      router.available = false;
      router.lastError = new Error("connect ECONNREFUSED");
      const op = start({ waitMs: 1_000, waitForReady: true });
      await vi.advanceTimersByTimeAsync(999);
      expect(op.settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const error = (await op.promise.catch((e: unknown) => e)) as NoServerError;
      expect(error).toBeInstanceOf(NoServerError);
      expect(error.message).toBe('no server could be reached for "orders:42" within the 1000 ms wait');
      expect(error.cause).toBe(router.lastError);
    });

    it("stops at an auth refusal: waiting would not change it", async () => {
      router.size = 1;
      const op = start({ waitMs: 5_000, waitForReady: true });
      router.lose(router.last(), false, new AuthError("refused"));
      await expect(op.promise).rejects.toBeInstanceOf(AuthError);
    });

    it("an abort during a pause ends it: nothing more is tried", async () => {
      router.available = false;
      const controller = new AbortController();
      const op = start({ waitMs: 0, waitForReady: true }, controller.signal);
      await vi.advanceTimersByTimeAsync(10 * RETRY_INTERVAL);
      const tried = router.attempts;
      controller.abort();
      await expect(op.promise).rejects.toBeInstanceOf(AbortError);
      await vi.advanceTimersByTimeAsync(10 * RETRY_INTERVAL);
      expect(router.attempts).toBe(tried);
      expect(finished).toBe(1);
    });
  });

  it("reports an auth refusal as such rather than as no server", async () => {
    router.size = 1;
    const op = start();
    router.lose(router.last(), false, new AuthError("refused"));
    await expect(op.promise).rejects.toBeInstanceOf(AuthError);
  });

  it("follows a redirect to the named address with the same id, without surfacing it", async () => {
    const op = start({ waitMs: 2_000 });
    router.reply(router.last(), { kind: "M", op: "A", key: SPEC.key, address: "10.0.0.9:7420", id: SPEC.id });
    expect(router.redirects).toEqual([{ from: 0, to: "10.0.0.9:7420" }]);
    expect(router.last().address).toBe("10.0.0.9:7420");
    expect(router.last().request).toMatchObject({ op: "A", id: SPEC.id });
    router.reply(router.last(), grant(3n));
    expect((await op.promise)?.token).toBe(3n);
  });

  it("backs off when the active a redirect names cannot be reached, as in a failover", async () => {
    const op = start({ waitMs: 5_000 });
    router.reply(router.last(), { kind: "M", op: "A", key: SPEC.key, address: "10.0.0.9:7420", id: SPEC.id });
    const toDeadActive = router.last();
    expect(toDeadActive.address).toBe("10.0.0.9:7420");
    router.lose(toDeadActive, false, new Error("refused"));
    expect(router.sent).toHaveLength(2);
    // Not a failed try of our own connections: after the pause it asks round-robin again.
    await vi.advanceTimersByTimeAsync(RETRY_INTERVAL);
    expect(router.sent).toHaveLength(3);
    expect(router.last().address).toBeUndefined();
    router.reply(router.last(), grant(4n));
    expect((await op.promise)?.token).toBe(4n);
  });

  it("moves on at once, without using up a try, when the active a redirect named drops a written attempt", async () => {
    router.size = 1;
    const op = start({ waitMs: 5_000 });
    for (let i = 0; i < 3; i++) {
      router.reply(router.last(), {
        kind: "M",
        op: "A",
        key: SPEC.key,
        address: "10.0.0.9:7420",
        id: SPEC.id,
      });
      router.lose(router.last(), true, new Error("reset"));
      expect(router.last().address).toBeUndefined();
    }
    expect(retries).toEqual([2, 3, 4]);
    router.reply(router.last(), grant(6n));
    expect((await op.promise)?.token).toBe(6n);
  });

  it("a pause between actives ends early once another node turns out to be the active", async () => {
    const op = start({ waitMs: 5_000 });
    router.reply(router.last(), { kind: "M", op: "A", key: SPEC.key, address: "10.0.0.9:7420", id: SPEC.id });
    router.lose(router.last(), false, new Error("refused"));
    expect(router.sent).toHaveLength(2);
    // The unreachable active itself cannot end the pause; another node that serves does.
    router.activeFound("10.0.0.9:7420");
    expect(router.sent).toHaveLength(2);
    router.activeFound("10.0.0.8:7420");
    expect(router.sent).toHaveLength(3);
    expect(router.waiting.size).toBe(0);
    router.reply(router.last(), grant(4n));
    expect((await op.promise)?.token).toBe(4n);
    // The pause's own timer was cancelled: nothing more is sent when it would have run.
    await vi.advanceTimersByTimeAsync(RETRY_INTERVAL);
    expect(router.sent).toHaveLength(3);
  });

  it("stops after too many redirects", async () => {
    const op = start();
    for (let i = 0; i <= MAX_REDIRECTS; i++) {
      router.reply(router.last(), {
        kind: "M",
        op: "A",
        key: SPEC.key,
        address: `10.0.0.${i}:7420`,
        id: SPEC.id,
      });
    }
    await expect(op.promise).rejects.toBeInstanceOf(ProtocolError);
  });

  it("asks again shortly after NO_ACTIVE, within the wait", async () => {
    const op = start({ waitMs: 1_000 });
    const noActive: Reply = errorReply("NO_ACTIVE");
    router.reply(router.last(), noActive);
    expect(router.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(RETRY_INTERVAL);
    expect(router.sent).toHaveLength(2);
    expect(router.last().request).toMatchObject({ waitMs: 1_000 - RETRY_INTERVAL });
    await vi.advanceTimersByTimeAsync(600);
    router.reply(router.last(), noActive);
    await expect(op.promise).rejects.toBeInstanceOf(LockTimeoutError);
  });

  it("asks again with the same id after SLOT_MOVING (a slot between clusters), within the wait", async () => {
    const op = start({ waitMs: 1_000 });
    router.reply(router.last(), errorReply("SLOT_MOVING"));
    expect(router.sent).toHaveLength(1);
    // Other requests served meanwhile (an active known) do not cut the pause short.
    router.activeFound("10.0.0.8:7420");
    expect(router.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(RETRY_INTERVAL);
    expect(router.sent).toHaveLength(2);
    expect(router.last().request).toMatchObject({ id: SPEC.id, waitMs: 1_000 - RETRY_INTERVAL });
    router.reply(router.last(), grant());
    await expect(op.promise).resolves.toMatchObject({ token: 5n });
  });

  it("moves on to another connection at once after SHUTTING_DOWN", async () => {
    const op = start();
    const first = router.last();
    router.reply(first, errorReply("SHUTTING_DOWN"));
    expect(router.drained).toEqual([first.ticket]);
    expect(router.sent).toHaveLength(2);
    router.reply(router.last(), grant());
    await expect(op.promise).resolves.toMatchObject({ token: 5n });
  });

  it("maps T to LockTimeoutError and other server refusals to LockServerError with their code", async () => {
    const timedOut = start({ waitMs: 100 });
    router.reply(router.last(), { kind: "T", key: SPEC.key, id: SPEC.id });
    await expect(timedOut.promise).rejects.toMatchObject({
      name: "LockTimeoutError",
      code: "LOCK_WAIT_TIMEOUT",
    });
    const refused = start({ id: "k1.2" });
    router.reply(router.last(), {
      kind: "E",
      op: "A",
      key: SPEC.key,
      id: "k1.2",
      code: "TOO_MANY_WAITERS",
      message: "queue full",
    });
    const error = await refused.promise.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockServerError);
    expect(error).toMatchObject({ code: "LOCK_SERVER_REFUSED", serverCode: "TOO_MANY_WAITERS" });
  });

  it("try-acquire sends Y and resolves with null on N", async () => {
    const op = start({ mode: "Y" });
    expect(router.last().request).toEqual({ op: "Y", key: SPEC.key, leaseMs: 30_000, id: SPEC.id });
    router.reply(router.last(), { kind: "N", key: SPEC.key, id: SPEC.id });
    expect(await op.promise).toBeNull();
  });

  it("an abort before the request was written withdraws it: nothing reaches the server", async () => {
    const controller = new AbortController();
    const op = start({}, controller.signal);
    router.last().ticket.state = "queued";
    controller.abort(new Error("user gave up"));
    const error = await op.promise.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).cause).toEqual(new Error("user gave up"));
    expect(router.withdrawn).toHaveLength(1);
    expect(router.sent).toHaveLength(1);
  });

  it("an abort after the write cancels on the same connection; a grant that won the race is released", async () => {
    const acquire = await abortedAfterWrite();
    const cancel = router.last();
    expect(cancel.request).toEqual({ op: "C", key: SPEC.key, id: SPEC.id });
    expect(cancel.connection).toBe(acquire.connection);
    router.reply(acquire, grant(11n));
    expect(unwanted).toEqual([[SPEC.key, 11n]]);
  });

  it("an abort answered by T leaves nothing to release", async () => {
    const acquire = await abortedAfterWrite();
    router.reply(acquire, { kind: "T", key: SPEC.key, id: SPEC.id });
    expect(unwanted).toEqual([]);
    expect(probed).toEqual([]);
  });

  it("an abort while a lost attempt is unresolved looks for its grant", async () => {
    const controller = new AbortController();
    const op = start({ waitMs: 5_000 }, controller.signal);
    router.lose(router.last(), true);
    router.reply(router.last(), errorReply("NO_ACTIVE"));
    // Between attempts: nothing in flight could answer for the lost one.
    controller.abort();
    await expect(op.promise).rejects.toBeInstanceOf(AbortError);
    expect(probed).toEqual([[SPEC.key, SPEC.id]]);
    await vi.advanceTimersByTimeAsync(RETRY_INTERVAL);
    expect(router.sent).toHaveLength(2);
  });

  it("a connection lost after giving up also looks for a grant", async () => {
    const acquire = await abortedAfterWrite();
    router.lose(acquire, true);
    expect(probed).toEqual([[SPEC.key, SPEC.id]]);
  });

  it("gives up on a silent server a little after a bounded wait, and cancels", async () => {
    const op = start({ waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_000 + REPLY_GRACE_MS - 1);
    expect(op.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await op.promise.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(router.last().request).toEqual({ op: "C", key: SPEC.key, id: SPEC.id });
  });

  it("waits forever for an unbounded wait, as the server does", async () => {
    const op = start({ waitMs: 0 });
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(op.settled).toBe(false);
    router.reply(router.last(), grant());
    await expect(op.promise).resolves.toMatchObject({ token: 5n });
  });

  it("stops listening to the signal once settled", async () => {
    const controller = new AbortController();
    const op = start({}, controller.signal);
    router.reply(router.last(), grant());
    await op.promise;
    controller.abort();
    expect(router.sent).toHaveLength(1);
  });
});
