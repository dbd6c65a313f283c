/**
 * Disposable places on the shared PostgreSQL and Redis servers: a random schema, a random key prefix.
 * Other runs use the same servers, so everything a test creates lives under that name and is dropped
 * on close. A missing server fails the test (connect errors propagate); nothing is skipped.
 */
import { Redis } from "ioredis";
import pg from "pg";
import { uniqueName } from "../contract/unique-name.js";
import type { RedisFenceClient } from "../redis/index.js";

export const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

export { uniqueName } from "../contract/unique-name.js";

export interface PgSandbox {
  pool: pg.Pool;
  schema: string;
  /** `schema.name`, for options that take a table name. */
  table(name: string): string;
  close(): Promise<void>;
}

/** Runs `sql`, whose rows have a `token` column selected as text, and returns the tokens in order. */
export async function selectTokens(
  db: pg.Pool | pg.ClientBase,
  sql: string,
  values: unknown[],
): Promise<bigint[]> {
  const { rows } = await db.query<{ token: string }>(sql, values);
  return rows.map((row) => BigInt(row.token));
}

export async function pgSandbox(poolSize = 6): Promise<PgSandbox> {
  const pool = new pg.Pool({ connectionString: PG_URL, max: poolSize });
  const schema = uniqueName("fence_test");
  await pool.query(`CREATE SCHEMA "${schema}"`);
  return {
    pool,
    schema,
    table: (name) => `${schema}.${name}`,
    async close() {
      try {
        await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
      } finally {
        await pool.end();
      }
    },
  };
}

export interface RedisSandbox {
  /** Every key a test writes starts with this. */
  prefix: string;
  client: Redis;
  /** Another connection, for real concurrency; closed with the sandbox. */
  connect(): Promise<Redis>;
  close(): Promise<void>;
}

export async function redisSandbox(): Promise<RedisSandbox> {
  const clients: Redis[] = [];
  const connect = async () => {
    // No retries: an unreachable server must fail the test now, not hang it.
    const client = new Redis(REDIS_URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    });
    await client.connect();
    clients.push(client);
    return client;
  };
  const client = await connect();
  const prefix = `${uniqueName("fence-test")}:`;
  return {
    prefix,
    client,
    connect,
    async close() {
      try {
        for await (const keys of client.scanStream({ match: `${prefix}*`, count: 500 })) {
          if (keys.length > 0) await client.del(...(keys as string[]));
        }
      } finally {
        await Promise.all(clients.map((each) => each.quit()));
      }
    },
  };
}

/**
 * A client for a RedisStore that loses a race: right after its store's GET of a fence key, a newer
 * holder sets the key to `value`, before the store's script runs.
 */
export function racingRedisClient(client: Redis, value: string): RedisFenceClient {
  return {
    get: async (fenceKey) => {
      const seen = await client.get(fenceKey);
      await client.set(fenceKey, value);
      return seen;
    },
    evalsha: (...args) => client.evalsha(...args),
    eval: (...args) => client.eval(...args),
  };
}
