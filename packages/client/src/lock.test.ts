import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LockLostError, NoServerError } from "./errors.js";
import { FakeBackend } from "./fakes.test.support.js";
import { Lock } from "./lock.js";

const LEASE = 300;

describe("Lock", () => {
  let backend: FakeBackend;
  let lock: Lock;

  beforeEach(() => {
    vi.useFakeTimers();
    backend = new FakeBackend();
    lock = Lock.create(backend, "orders:42", 1099511627777n, LEASE, Date.now() + LEASE, "k1.1.00");
  });
  afterEach(() => {
    backend.timers.stop();
    vi.useRealTimers();
  });

  it("counts its lease down from the deadline it was given", async () => {
    expect(lock.held).toBe(true);
    expect(lock.remainingMs).toBe(LEASE);
    await vi.advanceTimersByTimeAsync(100);
    expect(lock.remainingMs).toBe(200);
    await vi.advanceTimersByTimeAsync(200);
    expect(lock.remainingMs).toBe(0);
    expect(lock.held).toBe(false);
  });

  it("extend moves the deadline to the confirmed write time plus the lease", async () => {
    await vi.advanceTimersByTimeAsync(100);
    const extended = lock.extend(1_000);
    expect(backend.extends[0]).toMatchObject({ leaseMs: 1_000, untilMs: lock.expiresAt });
    const writtenAt = Date.now();
    await vi.advanceTimersByTimeAsync(5);
    backend.extends.shift()!.resolve(writtenAt);
    await extended;
    expect(lock.expiresAt).toBe(writtenAt + 1_000);
  });

  it("an extension the server refuses loses the lock and aborts its signal", async () => {
    const signal = lock.signal;
    const extended = lock.extend();
    backend.extends.shift()!.resolve(false);
    await expect(extended).rejects.toBeInstanceOf(LockLostError);
    expect(lock.state).toBe("lost");
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(backend.lostErrors).toHaveLength(1);
    await expect(lock.extend()).rejects.toBe(signal.reason);
    expect(await lock.release()).toBe(false);
    expect(backend.releases).toHaveLength(0);
  });

  it("a connection failure before the deadline is reported as is; the lock is still held", async () => {
    const extended = lock.extend();
    backend.extends.shift()!.reject(new NoServerError("refused"));
    await expect(extended).rejects.toBeInstanceOf(NoServerError);
    expect(lock.state).toBe("held");
  });

  it("no confirmation by the deadline loses the lock; extend rejects with the loss", async () => {
    const extended = lock.extend();
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(lock.state).toBe("lost");
    backend.extends.shift()!.reject(new NoServerError("no server answered X in time"));
    const error = await extended.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error).toBe(lock.signal.reason);
    expect(backend.lostErrors).toHaveLength(1);
  });

  it("an extension that fails for want of a server after the deadline loses the lock with that cause", async () => {
    backend.timers.stop(); // the expiry timer cannot run first: the failure is what finds the deadline past
    const extended = lock.extend();
    vi.setSystemTime(Date.now() + LEASE);
    backend.extends.shift()!.reject(new NoServerError("no server answered X in time"));
    const error = await extended.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as Error).cause).toBeInstanceOf(NoServerError);
    expect(lock.state).toBe("lost");
  });

  it("signal aborts when the lease runs out unextended, and not before", async () => {
    const signal = lock.signal;
    await vi.advanceTimersByTimeAsync(LEASE - 1);
    expect(signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    expect(signal.aborted).toBe(true);
    expect(backend.lostErrors).toHaveLength(1);
  });

  it("the lease running out unextended loses the lock even when nobody reads it", async () => {
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(backend.lostErrors).toHaveLength(1);
    expect(lock.state).toBe("lost");
    expect(lock.held).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBe(backend.lostErrors[0]);
  });

  // Past the deadline, before the expiry timer has had its turn: the first read must already see the
  // loss, and every other view must agree with it, whichever came first.
  it.each([
    ["state", (read: Lock) => read.state],
    ["held", (read: Lock) => read.held],
    ["signal", (read: Lock) => read.signal],
    ["remainingMs", (read: Lock) => read.remainingMs],
  ] as const)(
    "past the deadline, reading %s first: state, held, signal and the lost event agree",
    (_name, read) => {
      vi.setSystemTime(Date.now() + LEASE); // the clock moves; no timer runs
      read(lock);
      expect(lock.state).toBe("lost");
      expect(lock.held).toBe(false);
      expect(lock.remainingMs).toBe(0);
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(backend.lostErrors).toEqual([lock.signal.reason]);
    },
  );

  it("past the deadline, release() resolves false without a request and extend() rejects", async () => {
    vi.setSystemTime(Date.now() + LEASE);
    expect(await lock.release()).toBe(false);
    expect(backend.releases).toHaveLength(0);
    expect(backend.lostErrors).toHaveLength(1);
    await expect(lock.extend()).rejects.toBe(backend.lostErrors[0]);
    expect(backend.extends).toHaveLength(0);
  });

  it("an extension confirmed after the deadline comes too late, whether or not anything was read", async () => {
    const extended = lock.extend();
    vi.setSystemTime(Date.now() + LEASE);
    backend.confirmExtend();
    await expect(extended).rejects.toBeInstanceOf(LockLostError);
    expect(lock.state).toBe("lost");
    expect(backend.lostErrors).toHaveLength(1);
  });

  it("a late grant is not judged by its deadline until its refresh is confirmed", async () => {
    backend.timers.stop();
    backend = new FakeBackend();
    // Granted after a wait longer than the lease: the deadline known from the write is already past.
    const late = Lock.create(backend, "orders:42", 7n, LEASE, Date.now() - 10, "k1.2.00", true);
    expect(late.state).toBe("held");
    const refreshed = late.refresh();
    expect(backend.extends).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5);
    expect(backend.lostErrors).toHaveLength(0);
    backend.confirmExtend();
    await refreshed;
    expect(late.expiresAt).toBe(Date.now() + LEASE);
    expect(late.held).toBe(true);
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(late.state).toBe("lost");
    expect(backend.lostErrors).toHaveLength(1);
  });

  it("a late grant whose refresh is refused is lost, and the refresh rejects with LockLostError", async () => {
    const late = Lock.create(backend, "orders:42", 7n, LEASE, Date.now() - 10, "k1.2.00", true);
    const refreshed = late.refresh();
    backend.extends.shift()!.resolve(false);
    await expect(refreshed).rejects.toMatchObject({ code: "LOCK_LOST", key: "orders:42", token: 7n });
    expect(late.state).toBe("lost");
  });

  it("autoExtend renews at every third of the lease and keeps the lock through 5 lease periods", async () => {
    lock.startAutoExtend();
    const signal = lock.signal;
    for (let elapsed = 0; elapsed < 5 * LEASE; elapsed += LEASE / 3) {
      expect(backend.extends).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(LEASE / 3);
      expect(backend.extends).toHaveLength(1);
      backend.confirmExtend();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(signal.aborted).toBe(false);
    expect(lock.held).toBe(true);
    expect(lock.remainingMs).toBe(LEASE);
  });

  it("autoExtend gives up with the lease when no server confirms in time", async () => {
    lock.startAutoExtend();
    const signal = lock.signal;
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    const pending = backend.extends.shift()!;
    expect(pending.untilMs).toBe(lock.expiresAt);
    await vi.advanceTimersByTimeAsync((2 * LEASE) / 3);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    pending.reject(new NoServerError("no server answered X in time"));
    await vi.advanceTimersByTimeAsync(0);
    expect(backend.lostErrors).toHaveLength(1);
  });

  it("release is idempotent and ends the renewals; a refusal after it is not a loss", async () => {
    lock.startAutoExtend();
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    const inFlight = backend.extends.shift()!;
    const released = lock.release();
    expect(lock.release()).toBe(released);
    expect(lock.state).toBe("releasing");
    expect(backend.releases).toHaveLength(1);
    inFlight.resolve(false);
    backend.releases[0]!(undefined, true);
    expect(await released).toBe(true);
    expect(lock.state).toBe("released");
    expect(backend.lostErrors).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(5 * LEASE);
    expect(backend.extends).toHaveLength(0);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
  });

  it("a failed release rejects, and the lock still counts as let go", async () => {
    const released = lock.release();
    backend.releases[0]!(new NoServerError("no server answered R in time"), false);
    await expect(released).rejects.toBeInstanceOf(NoServerError);
    expect(lock.state).toBe("released");
  });

  it("await using releases at the end of the block, also when it throws", async () => {
    const run = async () => {
      await using held = lock;
      expect(held.held).toBe(true);
      throw new Error("work failed");
    };
    const outcome = run();
    await vi.advanceTimersByTimeAsync(0);
    backend.releases[0]!(undefined, true);
    await expect(outcome).rejects.toThrow("work failed");
    expect(lock.state).toBe("released");
  });
});
