import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { describe, expect, it } from "vitest";
import { manualTime } from "../manual-time.test.data.js";
import { MemoryCoordinationStore } from "./memory-store.js";
import { Ownership } from "./ownership.js";
import { type CoordinationStore, CoordinatorUnavailableError } from "./store.js";

const LEASE_MS = 2_000;
const MARGIN_MS = 200;

/** A memory store that can be made unreachable, and whose answers can be held back (a slow store). */
class ControlledStore {
  readonly inner: MemoryCoordinationStore;
  down = false;
  readonly #held: Array<() => void> = [];
  holdAnswers = false;

  constructor(clock: ManualClock) {
    this.inner = new MemoryCoordinationStore(clock);
  }

  /** Lets the held answers through, in order. */
  release(): void {
    for (const answer of this.#held.splice(0)) answer();
  }

  #call<T>(operation: () => Promise<T>): Promise<T> {
    if (this.down) return Promise.reject(new CoordinatorUnavailableError("store down"));
    const answer = operation();
    if (!this.holdAnswers) return answer;
    return new Promise<T>((resolve, reject) => this.#held.push(() => answer.then(resolve, reject)));
  }

  readonly store: CoordinationStore = {
    description: "controlled",
    takeEpoch: (atLeast, count) => this.#call(() => this.inner.takeEpoch(atLeast, count)),
    readEpoch: () => this.#call(() => this.inner.readEpoch()),
    acquireLease: (cluster, holder, ttlMs) =>
      this.#call(() => this.inner.acquireLease(cluster, holder, ttlMs)),
    renewLease: (lease) => this.#call(() => this.inner.renewLease(lease)),
    releaseLease: (lease) => this.#call(() => this.inner.releaseLease(lease)),
    readLease: (cluster) => this.#call(() => this.inner.readLease(cluster)),
    readDocument: (name) => this.#call(() => this.inner.readDocument(name)),
    writeDocument: (name, value, version) => this.#call(() => this.inner.writeDocument(name, value, version)),
    watchDocument: (name, onChange) => this.inner.watchDocument(name, onChange),
    close: () => this.inner.close(),
  };
}

function setup() {
  const clock = new ManualClock(1_000);
  const timers = new TimerQueue(clock, { host: "manual" });
  const controlled = new ControlledStore(clock);
  const events: string[] = [];
  const ownership = (holder: string) =>
    new Ownership({
      store: controlled.store,
      cluster: "c1",
      holder,
      leaseMs: LEASE_MS,
      marginMs: MARGIN_MS,
      clock,
      timers,
      events: {
        validityChanged: () => events.push(`${holder} validity`),
        lost: (by) => events.push(`${holder} lost to ${by}`),
        unavailable: (operation) => events.push(`${holder} unavailable: ${operation}`),
      },
    });
  const advance = manualTime(clock, timers);
  return { clock, timers, controlled, events, ownership, advance };
}

describe("Ownership", () => {
  it("takes the lease and two store epochs above what it knows, and is valid for the lease minus the margin from when it asked", async () => {
    const { ownership, clock, advance, controlled } = setup();
    const a = ownership("a 1");
    const sentAt = clock.now();
    const result = await a.acquire(41n);
    expect(result).toEqual({ owned: true, epoch: 42n });
    expect(await controlled.inner.readEpoch()).toBe(43n); // the spare
    controlled.down = true; // no renewal gets through from here
    await advance(LEASE_MS - MARGIN_MS - 1 - (clock.now() - sentAt));
    expect(a.valid()).toBe(true);
    await advance(1);
    expect(a.valid()).toBe(false);
  });

  it("stays valid while renewals come back, and tells when the lease lapsed (a slow store) and when a late renewal made it valid again", async () => {
    const { ownership, advance, controlled, events } = setup();
    const a = ownership("a 1");
    await a.acquire(0n);
    await advance(10 * LEASE_MS);
    expect(a.valid()).toBe(true);
    expect(events).toEqual([]);
    controlled.holdAnswers = true;
    await advance(LEASE_MS);
    expect(a.valid()).toBe(false);
    expect(events).toEqual(["a 1 validity"]);
    controlled.holdAnswers = false;
    controlled.release();
    await advance(0);
    // The renewal held back was sent less than a lease ago: valid again, from when it was sent.
    expect(a.valid()).toBe(true);
    expect(events).toEqual(["a 1 validity", "a 1 validity"]);
  });

  it("a renewal that comes back after the lease ran out in the store finds it lost", async () => {
    const { ownership, advance, controlled, events } = setup();
    const a = ownership("a 1");
    await a.acquire(0n);
    controlled.holdAnswers = true;
    await advance(3 * LEASE_MS);
    controlled.holdAnswers = false;
    controlled.release();
    await advance(LEASE_MS / 3);
    expect(events).toContain("a 1 lost to undefined");
    expect(a.held).toBe(false);
  });

  it("keeps another holder out until the lease expires in the store; the first then learns it lost it", async () => {
    const { ownership, advance, controlled, events } = setup();
    const a = ownership("a 1");
    const b = ownership("b 1");
    await a.acquire(0n);
    expect(await b.acquire(0n)).toEqual({ owned: false, holder: "a 1" });
    controlled.down = true;
    await advance(LEASE_MS);
    expect(a.valid()).toBe(false);
    controlled.down = false;
    const taken = await b.acquire(0n);
    expect(taken).toEqual({ owned: true, epoch: 3n });
    await advance(LEASE_MS / 3);
    expect(events).toContain("a 1 lost to b 1");
    expect(a.held).toBe(false);
  });

  it("a release lets the next holder in at once", async () => {
    const { ownership } = setup();
    const a = ownership("a 1");
    const b = ownership("b 1");
    await a.acquire(0n);
    await a.release();
    expect(a.valid()).toBe(false);
    expect(await b.acquire(0n)).toEqual({ owned: true, epoch: 3n });
  });

  it("hands out the spare epoch for an exhausted sequence and fetches the next one above it", async () => {
    const { ownership, advance } = setup();
    const a = ownership("a 1");
    await a.acquire(9n);
    expect(a.takeSpare()).toBe(11n);
    expect(a.valid()).toBe(false); // until the next spare is in
    await advance(0);
    expect(a.valid()).toBe(true);
    expect(a.takeSpare()).toBe(12n);
  });

  it("a raised epoch comes with a spare above it, and a late spare fetch never lowers it", async () => {
    const { ownership, advance, controlled } = setup();
    const a = ownership("a 1");
    await a.acquire(9n); // epoch 10, spare 11
    // A later epoch was learned: the raise takes 20, so the spare must be above 20, not 11.
    expect(await a.takeEpoch(19n)).toBe(20n);
    expect(a.takeSpare()).toBe(21n);
    // A raise while that spare's successor is being fetched: the higher of the two is kept.
    controlled.holdAnswers = true;
    const raised = a.takeEpoch(29n);
    controlled.release();
    expect(await raised).toBe(30n);
    controlled.holdAnswers = false;
    await advance(0);
    expect(a.takeSpare()).toBe(31n);
  });

  it("an acquire the store cannot answer rejects, and a lease it cannot serve from goes back", async () => {
    const { ownership, controlled } = setup();
    const a = ownership("a 1");
    controlled.down = true;
    await expect(a.acquire(0n)).rejects.toBeInstanceOf(CoordinatorUnavailableError);
    controlled.down = false;
    const b = ownership("b 1");
    // b takes the lease, then the store fails before its epochs: b gives the lease back.
    const originalTake = controlled.inner.takeEpoch.bind(controlled.inner);
    controlled.inner.takeEpoch = () => Promise.reject(new CoordinatorUnavailableError("gone"));
    await expect(b.acquire(0n)).rejects.toBeInstanceOf(CoordinatorUnavailableError);
    controlled.inner.takeEpoch = originalTake;
    expect(b.held).toBe(false);
    expect(await a.acquire(0n)).toMatchObject({ owned: true });
  });

  it("a late answer to an earlier acquire of the same holder extends its lease and never replaces it", async () => {
    const { ownership, controlled } = setup();
    const a = ownership("a 1");
    controlled.holdAnswers = true;
    const first = a.acquire(0n);
    controlled.holdAnswers = false;
    const second = await a.acquire(0n); // supersedes the first
    expect(second).toMatchObject({ owned: true });
    controlled.release();
    expect(await first).toEqual({ owned: false, holder: undefined });
    // Still this holder's, under the same handle: a renewal works and nobody else gets in.
    expect(await ownership("b 1").acquire(0n)).toEqual({ owned: false, holder: "a 1" });
    expect(a.valid()).toBe(true);
  });
});
