import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type CampaignOptions,
  type ElectionBackend,
  elect,
  type Leadership,
  type LeadershipLoss,
} from "./election.js";
import { AbortError, LockLostError } from "./errors.js";
import { FakeBackend } from "./fakes.test.support.js";
import { Lock } from "./lock.js";

interface Campaign {
  readonly key: string;
  readonly options: CampaignOptions;
  /** Grants the campaign's acquire now with `token`, as LockClient would hand the lock out. */
  grant(token: bigint): Lock;
  reject(error: Error): void;
}

/** An ElectionBackend whose acquires the test grants by hand, with Locks on a FakeBackend. */
class FakeCampaigns implements ElectionBackend {
  readonly locks = new FakeBackend();
  readonly campaigns: Campaign[] = [];
  readonly tracked = new Set<Leadership>();

  acquire(key: string, options: CampaignOptions): Promise<Lock> {
    return new Promise((resolve, reject) => {
      this.campaigns.push({
        key,
        options,
        grant: (token) => {
          const now = this.locks.timers.clock.now();
          const lock = Lock.create(this.locks, key, token, options.leaseMs, now + options.leaseMs, "k1.1.00");
          if (options.autoExtend) lock.startAutoExtend();
          resolve(lock);
          return lock;
        },
        reject,
      });
    });
  }

  track(leadership: Leadership): void {
    this.tracked.add(leadership);
  }

  forget(leadership: Leadership): void {
    this.tracked.delete(leadership);
  }
}

const LEASE = 300;

describe("elect", () => {
  let backend: FakeCampaigns;

  beforeEach(() => {
    vi.useFakeTimers();
    backend = new FakeCampaigns();
  });
  afterEach(() => {
    backend.locks.timers.stop();
    vi.useRealTimers();
  });

  /** Elects on "jobs:leader" with term `term`; `losses` collects what the lost listener is told. */
  async function elected(term = 7n): Promise<{ leader: Leadership; losses: LeadershipLoss[] }> {
    const leadership = elect(backend, "jobs:leader", { leaseMs: LEASE });
    backend.campaigns[0]!.grant(term);
    const leader = await leadership;
    const losses: LeadershipLoss[] = [];
    leader.on("lost", (loss) => losses.push(loss));
    return { leader, losses };
  }

  it("campaigns with an acquire that waits, extends itself and outlasts restarts of lockd", async () => {
    const signal = new AbortController().signal;
    void elect(backend, "jobs:leader", { leaseMs: LEASE, signal });
    expect(backend.campaigns[0]).toMatchObject({
      key: "jobs:leader",
      options: { leaseMs: LEASE, waitMs: 0, waitForReady: true, autoExtend: true, signal },
    });
    void elect(backend, "jobs:other", { leaseMs: LEASE, waitMs: 500, waitForReady: false });
    expect(backend.campaigns[1]!.options).toMatchObject({ waitMs: 500, waitForReady: false });
  });

  it("resolves once elected, with the grant's token as the term", async () => {
    const { leader } = await elected(1099511627777n);
    expect(leader).toMatchObject({ key: "jobs:leader", term: 1099511627777n, leaseMs: LEASE, leading: true });
    expect(leader.signal.aborted).toBe(false);
    expect(backend.tracked.has(leader)).toBe(true);
  });

  it("keeps leading past its first lease while the extensions are confirmed", async () => {
    const { leader, losses } = await elected();
    for (let round = 0; round < 3; round++) {
      await vi.advanceTimersByTimeAsync(LEASE / 3);
      expect(backend.locks.extends).toHaveLength(1);
      backend.locks.confirmExtend();
      await vi.advanceTimersByTimeAsync(0);
    }
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    expect(leader.leading).toBe(true);
    expect(losses).toEqual([]);
  });

  it("a refused extension ends the leadership once: signal, lost and the listener all say extension-refused", async () => {
    const { leader, losses } = await elected();
    const signal = leader.signal;
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    backend.locks.extends.shift()!.resolve(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(losses).toHaveLength(1);
    expect(losses[0]).toMatchObject({ key: "jobs:leader", term: 7n, reason: "extension-refused" });
    expect(losses[0]!.error).toBeInstanceOf(LockLostError);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(losses[0]!.error);
    expect(await leader.lost).toBe(losses[0]);
    expect(leader.leading).toBe(false);
    expect(backend.tracked.size).toBe(0);
    // Nothing that happens later reports it again: not the lease's end, not resign().
    await vi.advanceTimersByTimeAsync(LEASE * 3);
    expect(await leader.resign()).toBe(false);
    expect(losses).toHaveLength(1);
    expect(backend.locks.releases).toHaveLength(0);
  });

  it("a lease that runs out unconfirmed is lost, though nothing read the leadership", async () => {
    const { leader, losses } = await elected();
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(losses.map((loss) => loss.reason)).toEqual(["lease-lost"]);
    expect(leader.signal.reason).toBe(losses[0]!.error);
    // The extension that was in flight fails afterwards: still one loss.
    backend.locks.extends.shift()!.reject(new Error("no server answered X in time"));
    await vi.advanceTimersByTimeAsync(0);
    expect(losses).toHaveLength(1);
  });

  it("resign ends the leadership before the release goes out, then releases once", async () => {
    const { leader } = await elected();
    const releasesAtLoss: number[] = [];
    leader.on("lost", () => releasesAtLoss.push(backend.locks.releases.length));
    const resigned = leader.resign();
    expect(leader.resign()).toBe(resigned);
    expect(releasesAtLoss).toEqual([0]);
    expect((await leader.lost).reason).toBe("resigned");
    expect(leader.signal.aborted).toBe(true);
    expect(backend.locks.releases).toHaveLength(1);
    backend.locks.releases[0]!(undefined, true);
    expect(await resigned).toBe(true);
    // No extension goes out after the resignation.
    await vi.advanceTimersByTimeAsync(LEASE * 2);
    expect(backend.locks.extends).toHaveLength(0);
  });

  it("await using resigns at the end of the block", async () => {
    const { leader, losses } = await elected();
    {
      await using _leader = leader;
      // Answers the release that disposing sends.
      queueMicrotask(() => backend.locks.releases[0]?.(undefined, true));
    }
    expect(losses.map((loss) => loss.reason)).toEqual(["resigned"]);
  });

  it("a listener added after the loss is called once, on a microtask; off() removes one", async () => {
    const { leader } = await elected();
    const removed = vi.fn();
    leader.on("lost", removed).off("lost", removed);
    leader.clientClosing();
    const late = vi.fn();
    leader.on("lost", late);
    expect(late).not.toHaveBeenCalled();
    await Promise.resolve();
    expect(late).toHaveBeenCalledTimes(1);
    expect(late.mock.calls[0]![0]).toMatchObject({ reason: "client-closed" });
    expect(removed).not.toHaveBeenCalled();
  });

  it("a listener that throws does not keep the others from being told; its error is rethrown, not swallowed", async () => {
    const { leader, losses } = await elected();
    const failure = new Error("listener failed");
    leader.on("lost", () => {
      throw failure;
    });
    const after = vi.fn();
    leader.on("lost", after);
    const microtasks: unknown[] = [];
    const queue = vi.spyOn(globalThis, "queueMicrotask").mockImplementation((task) => microtasks.push(task));
    try {
      leader.clientClosing();
    } finally {
      queue.mockRestore();
    }
    expect(losses).toHaveLength(1);
    expect(after).toHaveBeenCalledTimes(1);
    expect(microtasks).toHaveLength(1);
    expect(() => (microtasks[0] as () => void)()).toThrow(failure);
  });

  it("rejects with the campaign's error when its signal aborts; nothing is tracked", async () => {
    const controller = new AbortController();
    const leadership = elect(backend, "jobs:leader", { leaseMs: LEASE, signal: controller.signal });
    controller.abort();
    backend.campaigns[0]!.reject(new AbortError("acquire", controller.signal.reason));
    await expect(leadership).rejects.toBeInstanceOf(AbortError);
    expect(backend.tracked.size).toBe(0);
  });

  it("rejects with the loss when the lock was lost before it could be handed out", async () => {
    const leadership = elect(backend, "jobs:leader", { leaseMs: LEASE });
    const lock = backend.campaigns[0]!.grant(7n);
    vi.setSystemTime(Date.now() + LEASE);
    await expect(leadership).rejects.toBe(lock.signal.reason);
    expect(backend.tracked.size).toBe(0);
  });
});
