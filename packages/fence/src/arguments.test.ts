/**
 * Programmer errors (a store that is not one, a write that is not a function, no database, no
 * options) are FenceErrors with a documented code, thrown before anything reaches a database, like
 * every other refusal of this package: not whatever TypeError the first use of the bad value raised.
 */
import Fastify from "fastify";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
import { NOT_WRITES } from "./contract/contract.js";
import { FenceError } from "./errors.js";
import { fencePlugin } from "./fastify/index.js";
import { fence } from "./fence.js";
import { checkFenceInput } from "./fence-input.js";
import { fencingHeaders } from "./headers.js";
import { memoryStore } from "./memory.js";
import { createFenceTable, fenceRow, postgresStore } from "./postgres/index.js";
import { redisStore } from "./redis/index.js";

// Nothing listens on port 1: a store that reached its database would fail with ECONNREFUSED instead.
const unreachablePool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:1/none" });
const unreachableRedis = new Redis({
  port: 1,
  lazyConnect: true,
  enableOfflineQueue: false,
  retryStrategy: () => null,
});
afterAll(async () => {
  await unreachablePool.end();
  unreachableRedis.disconnect();
});

/** `attempt` (a call, or what it returned) fails with FenceError `code`, its message matching `message`. */
async function refused(attempt: () => unknown, code: string, message: RegExp): Promise<void> {
  const error = await (async () => attempt())().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(FenceError);
  expect(error).toMatchObject({ name: "FenceError", code });
  expect((error as Error).message).toMatch(message);
}

describe("fence()", () => {
  it("refuses a store that is not a FenceStore with FENCE_BAD_ARGUMENT", async () => {
    for (const store of [undefined, null, {}, { fence: () => {} }, "store"]) {
      await refused(() => fence(store as never, "r", 1n, () => 1), "FENCE_BAD_ARGUMENT", /store/);
    }
  });

  it("refuses a write that is not a function with FENCE_BAD_ARGUMENT, advancing nothing", async () => {
    const store = memoryStore();
    for (const write of NOT_WRITES) {
      await refused(
        () => fence(store, "r", 5n, write as never),
        "FENCE_BAD_ARGUMENT",
        /write must be a function/,
      );
    }
    expect(await store.current("r")).toBeUndefined();
  });

  it("checks the token and the resource first, as before", async () => {
    await refused(
      () => fence(memoryStore(), "r", "abc" as never, undefined as never),
      "FENCE_BAD_TOKEN",
      /token/,
    );
  });
});

describe("each store's own fence(), called without fence()", () => {
  const stores = {
    memory: () => memoryStore(),
    postgres: () => postgresStore({ pool: unreachablePool }),
    redis: () => redisStore({ client: unreachableRedis }),
  };
  for (const [name, make] of Object.entries(stores)) {
    it(`${name}: refuses a write that is not a function before touching its database`, async () => {
      const store = make();
      for (const write of NOT_WRITES) {
        await refused(
          () => store.fence("r", 1n, write as never),
          "FENCE_BAD_ARGUMENT",
          /write must be a function/,
        );
      }
    });
  }

  it("checkFenceInput() checks a write when given one", () => {
    expect(checkFenceInput("r", 1n, () => {})).toBe(1n);
    expect(checkFenceInput("r", 1n)).toBe(1n);
    expect(() => checkFenceInput("r", 1n, undefined)).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_ARGUMENT" }),
    );
  });
});

describe("the adapters' factories and helpers", () => {
  it("refuses missing or unusable options with FENCE_BAD_OPTIONS", async () => {
    await refused(() => postgresStore(undefined as never), "FENCE_BAD_OPTIONS", /postgresStore\(\) needs/);
    await refused(() => postgresStore(null as never), "FENCE_BAD_OPTIONS", /postgresStore\(\) needs/);
    await refused(() => postgresStore({ pool: "pool" as never }), "FENCE_BAD_OPTIONS", /pool/);
    await refused(() => postgresStore({ client: {} as never }), "FENCE_BAD_OPTIONS", /client/);
    await refused(() => redisStore(undefined as never), "FENCE_BAD_OPTIONS", /redisStore\(\) needs/);
    await refused(() => redisStore({} as never), "FENCE_BAD_OPTIONS", /client/);
    await refused(
      () => fenceRow(unreachablePool, undefined as never),
      "FENCE_BAD_OPTIONS",
      /fenceRow\(\) needs/,
    );
    const row = { table: "orders", key: { id: 1 }, set: { status: "paid" }, token: 1n };
    await refused(
      () => fenceRow(unreachablePool, { ...row, key: undefined as never }),
      "FENCE_BAD_OPTIONS",
      /key/,
    );
    await refused(
      () => fenceRow(unreachablePool, { ...row, set: "paid" as never }),
      "FENCE_BAD_OPTIONS",
      /set/,
    );
  });

  it("refuses a missing database or lock with FENCE_BAD_ARGUMENT", async () => {
    const row = { table: "orders", key: { id: 1 }, set: { status: "paid" }, token: 1n };
    await refused(() => fenceRow(undefined as never, row), "FENCE_BAD_ARGUMENT", /fenceRow\(\).*query/);
    await refused(
      () => createFenceTable(undefined as never),
      "FENCE_BAD_ARGUMENT",
      /createFenceTable\(\).*query/,
    );
    await refused(() => fencingHeaders(undefined as never), "FENCE_BAD_ARGUMENT", /fencingHeaders\(\)/);
    await refused(() => fencingHeaders(null as never), "FENCE_BAD_ARGUMENT", /fencingHeaders\(\)/);
  });

  it("Fastify: request.fenced() with a write that is not a function answers 500 FENCE_BAD_ARGUMENT", async () => {
    const app = Fastify();
    await app.register(fencePlugin, { store: memoryStore() });
    app.put("/r", { config: { fence: { resource: "r" } } }, (request) => request.fenced("write" as never));
    const log = vi.fn();
    app.addHook("onError", async (_request, _reply, error) => void log(error));
    const response = await app.inject({ method: "PUT", url: "/r", headers: fencingHeaders({ token: 1n }) });
    expect([response.statusCode, response.json().code]).toEqual([500, "FENCE_BAD_ARGUMENT"]);
    expect(log.mock.calls[0]?.[0]).toBeInstanceOf(FenceError);
    await app.close();
  });
});
