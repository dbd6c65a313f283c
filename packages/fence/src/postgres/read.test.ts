/**
 * The read rule on a real Postgres: the shared contract (with its model test), and what only row locks
 * can show: a fenced read holds a newer write off until it ends, while other reads run beside it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeReadFenceContract } from "../contract/read-contract.js";
import { fence, fenceRead } from "../fence.js";
import { postgresFixture } from "../testing/fixtures.js";
import { type PgSandbox, pgSandbox, uniqueName } from "../testing/sandbox.js";
import { createFenceTable, PostgresStore } from "./index.js";

describeReadFenceContract("postgres", postgresFixture);

/** Resolves when `check` does; asks again on each macrotask (an event to await, not a timed sleep). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setImmediate(resolve));
}

/** A read that says when it is inside, then stays there until end(): a reader busy in its transaction. */
function heldRead(onEnd: () => void = () => {}) {
  let end!: () => void;
  const gate = new Promise<void>((resolve) => {
    end = resolve;
  });
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const body = async () => {
    entered();
    await gate;
    onEnd();
  };
  return { inside, end, body };
}

describe("PostgresStore.fenceRead() and row locks", () => {
  let sandbox: PgSandbox;
  let store: PostgresStore;
  beforeAll(async () => {
    sandbox = await pgSandbox(6);
    await createFenceTable(sandbox.pool, sandbox.table("fence"));
    store = new PostgresStore({ pool: sandbox.pool, table: sandbox.table("fence") });
  });
  afterAll(() => sandbox?.close());

  /** How many backends wait on a row lock of the fence table for `resource`'s guard. */
  const waitingOn = async (resource: string) => {
    const { rows } = await sandbox.pool.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0",
      [resource],
    );
    return rows[0].n as number;
  };

  it("holds a newer write off while a read runs, lets a read beside it, then the write goes in", async () => {
    const resource = uniqueName("held");
    // A row to lock: the first call on a resource inserts it, and until that call ends every other
    // one waits for its insert (a reader included).
    await fence(store, resource, 1n, () => undefined);
    const events: string[] = [];
    const held = heldRead(() => events.push("read 5 ends"));
    const read = fenceRead(store, resource, 5n, held.body, { record: true });
    await held.inside;
    // Another (non-recording) reader of the same phase reads while the first one is inside.
    await fenceRead(store, resource, 4n, () => events.push("read 4"));
    const write = fence(store, resource, 6n, () => events.push("write 6")).then(() =>
      events.push("write 6 committed"),
    );
    await until(async () => (await waitingOn(resource)) === 1); // the writer waits on the row lock
    expect(events).toEqual(["read 4"]);
    held.end();
    await Promise.all([read, write]);
    expect(events).toEqual(["read 4", "read 5 ends", "write 6", "write 6 committed"]);
    expect([await store.current(resource), await store.currentRead(resource)]).toEqual([6n, undefined]);
  });

  it("makes a stalled writer that reaches the row during a newer read wait for it, then refuses it", async () => {
    const resource = uniqueName("waits");
    const held = heldRead();
    const read = fenceRead(store, resource, 12n, held.body, { record: true });
    await held.inside;
    const stale = fence(store, resource, 11n, () => "never");
    // Expected from the start: the refusal may come before `read` settles, and a rejection nobody
    // handles yet fails the whole run (an unhandled rejection in CI).
    const refused = expect(stale).rejects.toMatchObject({ code: "FENCE_NEWER_READ", currentToken: 12n });
    await until(async () => (await waitingOn(resource)) === 1);
    held.end();
    await read;
    await refused;
  });
});

describe("a fence table created by @lock/fence 0.1", () => {
  let sandbox: PgSandbox;
  beforeAll(async () => {
    sandbox = await pgSandbox(2);
  });
  afterAll(() => sandbox?.close());

  it("is refused with FENCE_TABLE_OUTDATED until createFenceTable() brings it up to date, tokens kept", async () => {
    const table = sandbox.table("old_fence");
    // The 0.1 DDL, verbatim.
    await sandbox.pool.query(`CREATE TABLE ${table} (
      resource text PRIMARY KEY,
      token numeric(20, 0) NOT NULL CHECK (token BETWEEN 0 AND 18446744073709551615),
      updated_at timestamptz NOT NULL DEFAULT now())`);
    await sandbox.pool.query(`INSERT INTO ${table} (resource, token) VALUES ('orders:1', 40)`);
    const store = new PostgresStore({ pool: sandbox.pool, table });
    await expect(fence(store, "orders:1", 41n, () => "x")).rejects.toMatchObject({
      code: "FENCE_TABLE_OUTDATED",
      cause: expect.objectContaining({ code: "42703" }),
    });
    await expect(fenceRead(store, "orders:1", 41n, () => "x")).rejects.toMatchObject({
      code: "FENCE_TABLE_OUTDATED",
    });
    await expect(store.current("orders:1")).rejects.toMatchObject({ code: "FENCE_TABLE_OUTDATED" });
    await createFenceTable(sandbox.pool, table);
    expect(await store.current("orders:1")).toBe(40n);
    await expect(fence(store, "orders:1", 39n, () => "x")).rejects.toMatchObject({
      code: "FENCE_STALE_TOKEN",
    });
    await fenceRead(store, "orders:2", 7n, () => "read first", { record: true });
    expect([await store.current("orders:2"), await store.currentRead("orders:2")]).toEqual([undefined, 7n]);
  });
});
