/** ContractFixture for each adapter, on the real servers of sandbox.ts. */

import type { ReadContractFixture } from "../contract/read-contract.js";
import { type MemoryFenceTx, MemoryStore } from "../memory.js";
import { createFenceTable, type PostgresFenceTx, PostgresStore } from "../postgres/index.js";
import { type RedisFenceReadTx, type RedisFenceTx, RedisStore } from "../redis/index.js";
import { pgSandbox, redisSandbox, selectTokens } from "./sandbox.js";

const RACERS = 4;

export async function memoryFixture(): Promise<ReadContractFixture<MemoryFenceTx>> {
  const logs = new Map<string, bigint[]>();
  const store = new MemoryStore();
  return {
    store,
    racers: Array(RACERS).fill(store),
    appendLog: (_tx, resource, token) => logs.set(resource, [...(logs.get(resource) ?? []), token]),
    readLog: async (resource) => logs.get(resource) ?? [],
    readLogIn: (_tx, resource) => [...(logs.get(resource) ?? [])],
    undoesWrites: false,
    close: async () => {},
  };
}

export async function postgresFixture(): Promise<
  ReadContractFixture<PostgresFenceTx> & { store: PostgresStore }
> {
  const sandbox = await pgSandbox(RACERS + 2);
  await createFenceTable(sandbox.pool, sandbox.table("lock_fence"));
  const log = sandbox.table("applied");
  await sandbox.pool.query(
    `CREATE TABLE ${log} (seq bigserial PRIMARY KEY, resource text NOT NULL, token numeric(20, 0) NOT NULL)`,
  );
  const store = new PostgresStore({ pool: sandbox.pool, table: sandbox.table("lock_fence") });
  const selectLog = `SELECT token::text AS token FROM ${log} WHERE resource = $1 ORDER BY seq`;
  return {
    store,
    // One pool of RACERS + 2 connections: each racing fence() runs on its own connection.
    racers: Array(RACERS).fill(store),
    // The fence row lock serialises writers of a resource, so seq order is the order writes applied.
    appendLog: (tx, resource, token) =>
      tx.query(`INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, [resource, token.toString()]),
    readLog: (resource) => selectTokens(sandbox.pool, selectLog, [resource]),
    readLogIn: (tx, resource) => selectTokens(tx, selectLog, [resource]),
    undoesWrites: true,
    close: () => sandbox.close(),
  };
}

export async function redisFixture(): Promise<
  ReadContractFixture<RedisFenceTx, RedisFenceReadTx> & { store: RedisStore }
> {
  const sandbox = await redisSandbox();
  const keyPrefix = `${sandbox.prefix}fence:`;
  const logKey = (resource: string) => `${sandbox.prefix}log:${resource}`;
  const racers: RedisStore[] = [];
  for (let i = 0; i < RACERS; i++)
    racers.push(new RedisStore({ client: await sandbox.connect(), keyPrefix }));
  return {
    store: new RedisStore({ client: sandbox.client, keyPrefix }),
    racers,
    // RPUSH inside the fence script: the list order is the order writes applied.
    appendLog: (tx, resource, token) => tx.call("RPUSH", logKey(resource), token.toString()),
    readLog: async (resource) => (await sandbox.client.lrange(logKey(resource), 0, -1)).map(BigInt),
    readLogIn: (tx, resource) =>
      tx.call("LRANGE", logKey(resource), 0, -1).then((list) => (list as string[]).map(BigInt)),
    undoesWrites: true,
    close: () => sandbox.close(),
  };
}
