import { randomBytes } from "node:crypto";
import { type Lock, LockClient } from "@lock/client";
import { fence, StaleTokenError } from "@lock/fence";
import { createFenceTable, postgresStore } from "@lock/fence/postgres";
import { keySlot, SlotMap } from "@lock/protocol";
import { SLOT_MAP_DOCUMENT } from "@lock/server";
import type { LockdCluster } from "@lock/testkit";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { slotClusters } from "./slot-clusters.test.support.js";

/**
 * Moving a slot between two clusters (docs/consistency.md, "Moving slots"), with real lockd processes
 * and a real etcd holding the map, a real Postgres fence and @lock/client. Keys tagged `{bar}` share
 * slot 5061, east's until it moves.
 */
const SLOT = keySlot("bar");
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const harness = slotClusters();

/** East and west over one etcd prefix, halves of the slot map, each node following it. */
async function twoClusters() {
  const { east, west, store, eastProbe, westProbe, address } = await harness.halves([
    "--admin",
    "127.0.0.1:0",
  ]);
  const client = () => {
    const c = new LockClient({ servers: [address(east), address(west)] });
    harness.defer(() => c.close());
    return c;
  };
  /** POST /slots/moves on `via`'s admin server. */
  const move = (via: LockdCluster, body: unknown) =>
    fetch(`http://127.0.0.1:${via.nodes[0]!.adminPort}/slots/moves`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  /** The owner of SLOT in the store's map, once its move has committed. */
  const committedTo = async (cluster: string) => {
    await expect
      .poll(
        async () => {
          const document = (await store.readDocument(SLOT_MAP_DOCUMENT))!;
          const { cluster, movingTo } = SlotMap.fromDocument(document.version, document.value).rangeOf(SLOT);
          return { cluster, movingTo };
        },
        { timeout: 15_000, interval: 50 },
      )
      .toEqual({ cluster, movingTo: undefined });
  };
  return { east, west, eastProbe, westProbe, client, move, committedTo };
}

describe("moving a slot between clusters", () => {
  it("Kleppmann's scenario across the move: the fence refuses the stalled holder from the source, never the target's holder; waiters re-sent; A→B→A tokens keep rising", async () => {
    const { east, west, eastProbe, westProbe, client, move, committedTo } = await twoClusters();
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    harness.defer(() => pool.end());
    const table = `lock_fence_move_${randomBytes(4).toString("hex")}`;
    await createFenceTable(pool, table);
    harness.defer(async () => void (await pool.query(`DROP TABLE IF EXISTS ${table}`)));
    const fences = postgresStore({ pool, table });
    const resource = `account:${randomBytes(4).toString("hex")}`;
    const write = (token: bigint) =>
      fence(fences, resource, token, async () => "written").then(
        () => "accepted",
        (error: unknown) => {
          if (error instanceof StaleTokenError) return "refused";
          throw error;
        },
      );
    const key = `{bar}:${resource}`;
    expect(keySlot(key)).toBe(SLOT);

    // Client 1 holds the key at east (a short lease), writes, then stalls: it never extends again.
    const stalled = await client().acquire(key, { leaseMs: 3_000, waitMs: 5_000 });
    expect(await write(stalled.token)).toBe("accepted");
    // Client 2 waits for it; so does a waiter on another key of the slot, held by a third client.
    const other = `{bar}:other-${resource}`;
    const otherHolder = await client().acquire(other, { leaseMs: 30_000, waitMs: 5_000 });
    const waiting = client();
    const redirects: string[] = [];
    waiting.on("redirect", ({ to }) => redirects.push(to));
    const next = waiting.acquire(key, { leaseMs: 30_000, waitMs: 20_000 });
    const otherNext = waiting.acquire(other, { leaseMs: 30_000, waitMs: 20_000 });
    await expect.poll(() => eastProbe.request(`I`)).toMatch(/\bwaiters=2\b/);

    const begun = await move(west, { from: SLOT, to: SLOT, target: "west" });
    expect(begun.status).toBe(202);
    expect(await begun.json()).toMatchObject({ source: "east", target: "west", from: SLOT, to: SLOT });
    // The source refuses what would grant there; a holder may still release.
    await expect.poll(() => eastProbe.request(`Y {bar}:fresh 1`)).toMatch(/^E Y \{bar\}:fresh SLOT_MOVING /);
    await expect(stalled.extend(1_500)).rejects.toMatchObject({ serverCode: "SLOT_MOVING" });
    expect(await otherHolder.release()).toBe(true);
    // East's active says what is left to drain: the stalled holder's key.
    const drain = async () =>
      (
        (await (await fetch(`http://127.0.0.1:${east.nodes[0]!.adminPort}/slots`)).json()) as {
          drain: unknown;
        }
      ).drain;
    await expect
      .poll(drain)
      .toMatchObject({ heldKeys: 1, ranges: [{ from: SLOT, to: SLOT, movingTo: "west" }] });
    // Nothing is granted in the slot before the commit: the stalled holder's lease must run out.
    expect(await westProbe.request(`Y ${key} 1`)).toMatch(/^S Y .* east /);
    await committedTo("west");
    const successor: Lock = await next;
    const otherSuccessor = await otherNext;
    expect(successor.token).toBeGreaterThan(stalled.token);
    expect(otherSuccessor.token).toBeGreaterThan(otherHolder.token);
    expect(redirects).toContain(west.proxies[0]!.address);
    // West holds both now; east redirects the slot to west.
    expect(await westProbe.request(`Y ${key} 1`)).toBe(`N ${key}`);
    expect(await eastProbe.request(`Y ${key} 1`)).toMatch(/^S Y .* west /);

    // The successor writes; the stalled client wakes and writes with its old token: refused.
    expect(await write(successor.token)).toBe("accepted");
    expect(await write(stalled.token)).toBe("refused");
    expect(await write(successor.token)).toBe("accepted");
    expect(await stalled.release()).toBe(false);

    // And back (A→B→A): east's next grant is above west's.
    expect(await successor.release()).toBe(true);
    expect(await otherSuccessor.release()).toBe(true);
    expect((await move(east, { from: SLOT, to: SLOT, target: "east" })).status).toBe(202);
    await committedTo("east");
    const back = await client().acquire(key, { leaseMs: 30_000, waitMs: 10_000 });
    expect(back.token).toBeGreaterThan(successor.token);
    expect(await write(back.token)).toBe("accepted");
    expect(await write(successor.token)).toBe("refused");
    expect(await eastProbe.request(`Y ${key} 1`)).toBe(`N ${key}`);
  }, 60_000);

  it("refuses a move it cannot begin, with a stable code", async () => {
    const { east, move } = await twoClusters();
    const bad = async (body: unknown, status: number, code: string) => {
      const answer = await move(east, body);
      expect(answer.status).toBe(status);
      expect(await answer.json()).toMatchObject({ code });
    };
    await bad({ from: 0, to: 9000, target: "west" }, 400, "INVALID_MOVE"); // two clusters' slots
    await bad({ from: 0, to: 10, target: "north" }, 400, "INVALID_MOVE"); // unknown cluster
    await bad({ from: 0, to: 10, target: "east" }, 400, "INVALID_MOVE"); // already there
    await bad({ from: -1, to: 10, target: "west" }, 400, "INVALID_MOVE");
    await bad({ from: 10, to: 0, target: "west" }, 400, "INVALID_MOVE");
    expect((await move(east, { from: 0, to: 10, target: "west" })).status).toBe(202);
    await bad({ from: 5, to: 6, target: "west" }, 400, "INVALID_MOVE"); // already moving
  }, 30_000);
});
