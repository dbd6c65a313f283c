import { describe, expect, it } from "vitest";
import { DEFAULT_OPTIONS, resolveOptions } from "./options.js";
import { type PoolSlot, ServerPool } from "./server-pool.js";

const INTERVAL = 3_000;
const HINT_INTERVAL = 200;
const ANSWER_TIMEOUT = 250;
const OPTIONS = {
  reconnectIntervalMs: INTERVAL,
  hintIntervalMs: HINT_INTERVAL,
  answerTimeoutMs: ANSWER_TIMEOUT,
};

function readyPool(addresses: string[]): ServerPool {
  const pool = new ServerPool(addresses, OPTIONS);
  for (const slot of pool.dueForConnect(0)) {
    pool.connecting(slot, 0);
    pool.ready(slot);
  }
  return pool;
}

const picks = (pool: ServerPool, count: number, address?: string) =>
  Array.from({ length: count }, () => pool.pick(address)?.index);

describe("ServerPool", () => {
  it("keeps one connection per address, and two for a single address", () => {
    expect(new ServerPool(["a:1", "b:1", "c:1"], OPTIONS).size).toBe(3);
    const single = new ServerPool(["a:1"], OPTIONS);
    expect(single.slots.map((slot) => slot.address)).toEqual(["a:1", "a:1"]);
  });

  it("connects every slot at once at the start", () => {
    const pool = new ServerPool(["a:1", "b:1"], OPTIONS);
    expect(pool.dueForConnect(0)).toHaveLength(2);
    expect(pool.pick()).toBeUndefined();
  });

  it("reconnects 3 s apart by default", () => {
    expect(DEFAULT_OPTIONS.reconnectIntervalMs).toBe(3_000);
    expect(resolveOptions({ servers: ["a:1"] }).reconnectIntervalMs).toBe(3_000);
  });

  it("picks ready connections round-robin", () => {
    const pool = readyPool(["a:1", "b:1", "c:1"]);
    expect(picks(pool, 7)).toEqual([0, 1, 2, 0, 1, 2, 0]);
  });

  it("skips a connection that went down, and reconnects it after the interval, and again after each failure", () => {
    const pool = readyPool(["a:1", "b:1", "c:1"]);
    const b = pool.slots[1]!;
    pool.down(b, 10_000, new Error("reset"));
    expect(picks(pool, 4)).toEqual([0, 2, 0, 2]);
    expect(pool.nextConnectAt()).toBe(10_000 + INTERVAL);
    expect(pool.dueForConnect(10_000 + INTERVAL - 1)).toEqual([]);
    expect(pool.dueForConnect(10_000 + INTERVAL)).toEqual([b]);
    pool.connecting(b, 13_000);
    pool.down(b, 13_050, new Error("refused"));
    expect(b.failedAttempts).toBe(1);
    expect(pool.nextConnectAt()).toBe(13_050 + INTERVAL);
    pool.connecting(b, 16_050);
    pool.ready(b);
    expect(b.failedAttempts).toBe(0);
    expect(pool.nextConnectAt()).toBeUndefined();
    expect(new Set(picks(pool, 3))).toEqual(new Set([0, 1, 2]));
  });

  describe("reconnect jitter", () => {
    const JITTER = 1_000;
    /** A scripted random source: hands out `values` in turn. */
    const scripted =
      (...values: number[]) =>
      () => {
        const value = values.shift();
        if (value === undefined) throw new Error("the test ran out of random values");
        return value;
      };
    /** A small seeded generator (mulberry32): a fleet of clients, each with its own draws, repeatably. */
    const seeded = (seed: number) => () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };

    it("adds a random part of reconnectJitterMs to every background reconnect, never less than the interval", () => {
      const pool = new ServerPool(["a:1"], {
        ...OPTIONS,
        reconnectJitterMs: JITTER,
        random: scripted(0, 0.5, 0.9999),
      });
      const [first, second] = pool.slots as [PoolSlot, PoolSlot];
      for (const slot of pool.dueForConnect(0)) {
        pool.connecting(slot, 0);
        pool.ready(slot);
      }
      // Both connections drop at the same moment (the node restarted).
      expect(pool.down(first, 10_000)).toBe(INTERVAL);
      expect(pool.down(second, 10_000)).toBe(INTERVAL + 500);
      expect(pool.dueForConnect(10_000 + INTERVAL)).toEqual([first]);
      pool.connecting(first, 13_000);
      expect(pool.nextConnectAt()).toBe(10_000 + INTERVAL + 500);
      // A failed attempt is jittered again.
      expect(pool.down(first, 13_010)).toBe(INTERVAL + 999);
      expect(pool.dueForConnect(13_010 + INTERVAL + 998)).toEqual([second]);
    });

    it("spreads a fleet that lost its node at one moment over the jitter, where without it all reconnect together", () => {
      const fleet = (jitter: number) =>
        Array.from({ length: 200 }, (_, client) => {
          const pool = new ServerPool(["a:1"], {
            ...OPTIONS,
            reconnectJitterMs: jitter,
            random: seeded(client),
          });
          const slot = pool.slots[0]!;
          pool.connecting(slot, 0);
          pool.ready(slot);
          pool.down(slot, 0);
          return slot.nextConnectAt;
        });
      expect(new Set(fleet(0))).toEqual(new Set([INTERVAL]));
      const jittered = fleet(JITTER);
      expect(Math.min(...jittered)).toBeGreaterThanOrEqual(INTERVAL);
      expect(Math.max(...jittered)).toBeLessThan(INTERVAL + JITTER);
      // Spread over the whole second: every tenth of it gets some of the fleet, none most of it.
      const perTenth = new Array<number>(10).fill(0);
      for (const at of jittered) perTenth[Math.floor((at - INTERVAL) / (JITTER / 10))]! += 1;
      expect(Math.min(...perTenth)).toBeGreaterThan(0);
      expect(Math.max(...perTenth)).toBeLessThan(60);
    });

    it("is on by default: 1 s on top of the 3 s interval", () => {
      expect(DEFAULT_OPTIONS.reconnectJitterMs).toBe(1_000);
      expect(resolveOptions({ servers: ["a:1"] }).reconnectJitterMs).toBe(1_000);
      expect(resolveOptions({ servers: ["a:1"], reconnectJitterMs: 0 }).reconnectJitterMs).toBe(0);
    });
  });

  it("says when a request can wait for a connection that is opening", () => {
    const pool = new ServerPool(["a:1", "b:1"], OPTIONS);
    const [a, b] = pool.slots as [PoolSlot, PoolSlot];
    pool.connecting(a, 0);
    expect(pool.isConnecting()).toBe(true);
    expect(pool.isConnecting("b:1")).toBe(false);
    pool.down(a, 0);
    pool.down(b, 0);
    expect(pool.isConnecting()).toBe(false);
  });

  it("prefers nodes that did not redirect, and falls back to standbys when nothing else is ready", () => {
    const pool = readyPool(["a:1", "b:1", "c:1"]);
    pool.standby("a:1");
    pool.standby("b:1");
    expect(picks(pool, 3)).toEqual([2, 2, 2]);
    pool.down(pool.slots[2]!, 0);
    expect(new Set(picks(pool, 4))).toEqual(new Set([0, 1]));
    pool.serving(pool.slots[0]!);
    expect(picks(pool, 2)).toEqual([0, 0]);
  });

  it("forgets the standby mark when the connection opens again", () => {
    const pool = readyPool(["a:1", "b:1"]);
    const a = pool.slots[0]!;
    pool.standby("a:1");
    pool.down(a, 0);
    pool.connecting(a, 0);
    pool.ready(a);
    expect(a.standby).toBe(false);
  });

  it("adds a slot for a redirect target that is not configured, due at once", () => {
    const pool = readyPool(["a:1"]);
    const [added] = pool.ensure("[::1]:7420", 500);
    expect(pool.size).toBe(3);
    expect(added!.address).toBe("[::1]:7420");
    expect(pool.dueForConnect(500)).toEqual([added]);
    expect(pool.ensure("[::1]:7420", 600)).toEqual([added]);
    expect(pool.pick("[::1]:7420")).toBeUndefined();
    pool.connecting(added!, 500);
    pool.ready(added!);
    expect(pool.pick("[::1]:7420")).toBe(added);
  });

  it("connects a down slot at once when a redirect names it, not at its background interval", () => {
    const pool = readyPool(["a:1", "b:1"]);
    const a = pool.slots[0]!;
    pool.down(a, 1_000, new Error("reset"));
    expect(pool.nextConnectAt()).toBe(1_000 + INTERVAL);
    expect(pool.ensure("a:1", 1_500)).toEqual([a]);
    expect(pool.dueForConnect(1_500)).toEqual([a]);
    pool.connecting(a, 1_500);
    pool.down(a, 1_510, new Error("refused"));
    // Refused again at once: the next redirect may bring it forward only a hint interval after the
    // latest attempt, so redirects to a dead node do not turn into a connect storm.
    pool.ensure("a:1", 1_520);
    expect(pool.dueForConnect(1_520)).toEqual([]);
    expect(pool.nextConnectAt()).toBe(1_500 + HINT_INTERVAL);
    expect(pool.dueForConnect(1_500 + HINT_INTERVAL)).toEqual([a]);
    // Without redirects, background attempts keep the reconnect interval.
    pool.connecting(a, 1_700);
    pool.down(a, 1_710);
    expect(pool.nextConnectAt()).toBe(1_710 + INTERVAL);
  });

  it("a request that finds nothing ready or connecting brings every down slot forward, as a redirect does", () => {
    const pool = readyPool(["a:1", "b:1"]);
    const [a, b] = pool.slots as [PoolSlot, PoolSlot];
    pool.down(a, 1_000);
    pool.connecting(b, 900);
    pool.down(b, 1_000);
    pool.wanted(1_050);
    expect(pool.dueForConnect(1_050)).toEqual([a]);
    expect(pool.dueForConnect(900 + HINT_INTERVAL)).toEqual([a, b]);
  });

  it("a redirect leaves connecting and ready slots alone", () => {
    const pool = new ServerPool(["a:1", "b:1"], OPTIONS);
    const [a, b] = pool.slots as [PoolSlot, PoolSlot];
    pool.connecting(a, 0);
    pool.connecting(b, 0);
    pool.ready(b);
    pool.ensure("a:1", 10);
    pool.ensure("b:1", 10);
    expect([a.state, b.state]).toEqual(["connecting", "ready"]);
    expect(pool.dueForConnect(10)).toEqual([]);
  });

  describe("a silent connection", () => {
    it("is avoided like a standby while it is silent, and used again once it speaks", () => {
      const pool = readyPool(["a:1", "b:1", "c:1"]);
      const [a] = pool.slots as [PoolSlot];
      pool.standby("b:1");
      pool.standby("c:1");
      expect(picks(pool, 2)).toEqual([0, 0]);
      pool.silent(a, 1_000);
      expect(new Set(picks(pool, 4))).toEqual(new Set([1, 2]));
      pool.spoke(a);
      expect(picks(pool, 2)).toEqual([0, 0]);
    });

    it("probes one ready slot of every other address at once, fast while a promotion is expected, then slower", () => {
      const pool = readyPool(["a:1", "b:1", "c:1"]);
      const [a, b, c] = pool.slots as [PoolSlot, PoolSlot, PoolSlot];
      expect(pool.nextProbeAt()).toBeUndefined();
      pool.silent(a, 1_000);
      expect(pool.nextProbeAt()).toBe(1_000);
      expect(pool.probeTargets(1_000)).toEqual([b, c]);
      // Not due again until the fast interval (a fifth of the answer timeout) has passed.
      expect(pool.probeTargets(1_001)).toEqual([]);
      const fast = ANSWER_TIMEOUT / 5;
      expect(pool.nextProbeAt()).toBe(1_000 + fast);
      let now = 1_000 + fast;
      while (now - 1_000 < 4 * ANSWER_TIMEOUT) {
        expect(pool.probeTargets(now)).toEqual([b, c]);
        now = pool.nextProbeAt()!;
      }
      expect(pool.probeTargets(now)).toEqual([b, c]);
      expect(pool.nextProbeAt()).toBe(now + ANSWER_TIMEOUT);
      pool.spoke(a);
      expect(pool.nextProbeAt()).toBeUndefined();
      expect(pool.probeTargets(now + ANSWER_TIMEOUT)).toEqual([]);
    });

    it("does not probe the silent node's own other slot, and brings idle slots of other nodes forward", () => {
      const single = readyPool(["a:1"]);
      single.silent(single.slots[0]!, 0);
      expect(single.probeTargets(0)).toEqual([]);
      const pool = readyPool(["a:1", "b:1"]);
      const [a, b] = pool.slots as [PoolSlot, PoolSlot];
      pool.down(b, 500);
      pool.silent(a, 1_000);
      expect(pool.probeTargets(1_000)).toEqual([]);
      // b's background reconnect was due at 3 500; the silence makes it due now.
      expect(pool.dueForConnect(1_000)).toEqual([b]);
    });

    it("is dropped and distrusted when another node claims the active role; stays avoided after a reconnect until it serves", () => {
      const pool = readyPool(["a:1", "b:1", "c:1"]);
      const [a, b, c] = pool.slots as [PoolSlot, PoolSlot, PoolSlot];
      pool.standby("b:1");
      pool.standby("c:1");
      pool.silent(a, 1_000);
      expect(pool.claimsActive(b)).toEqual([a]);
      expect(a.distrusted).toBe(true);
      expect(b.standby).toBe(false);
      pool.down(a, 1_300);
      expect(pool.nextProbeAt()).toBeUndefined();
      expect(picks(pool, 2)).toEqual([1, 1]);
      pool.connecting(a, 4_300);
      pool.ready(a);
      // Reconnected, but the old active may still be stopped behind a socket that accepts.
      expect(picks(pool, 2)).toEqual([1, 1]);
      pool.serving(a);
      expect(new Set(picks(pool, 4))).toEqual(new Set([0, 1]));
      expect(c.standby).toBe(true);
    });

    it("a claim while nothing is silent changes nothing: two nodes that answer are a partition's two actives", () => {
      const pool = readyPool(["a:1", "b:1"]);
      const [, b] = pool.slots as [PoolSlot, PoolSlot];
      pool.standby("b:1");
      expect(pool.claimsActive(b)).toEqual([]);
      expect(b.standby).toBe(true);
    });
  });

  it("a distrusted node (its connection reset requests unanswered) is used only when named, until it serves", () => {
    const pool = readyPool(["a:1", "b:1"]);
    const [a] = pool.slots as [PoolSlot];
    pool.standby("b:1");
    pool.distrust(a);
    expect(picks(pool, 2)).toEqual([1, 1]);
    expect(pool.pick("a:1")).toBe(a);
    pool.serving(a);
    expect(picks(pool, 2)).toEqual([0, 0]);
  });

  it("takes a draining node out of rotation", () => {
    const pool = readyPool(["a:1", "b:1"]);
    pool.draining(pool.slots[0]!);
    expect(picks(pool, 3)).toEqual([1, 1, 1]);
  });

  it("remembers the last connection error", () => {
    const pool = readyPool(["a:1", "b:1"]);
    const error = new Error("refused");
    pool.down(pool.slots[1]!, 0, error);
    pool.down(pool.slots[0]!, 0);
    expect(pool.lastError).toBe(error);
  });
});
