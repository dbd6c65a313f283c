import { randomInt } from "node:crypto";
import type { Locker } from "./locker.js";

/**
 * PostgreSQL session-level advisory locks through node-postgres, as an application takes them: a
 * connection from a `pg.Pool` of `poolSize` connections (all opened before the run), then
 * `pg_advisory_lock` (waits in the server while another session holds the key) and, to release,
 * `pg_advisory_unlock` on the same connection before it goes back to the pool. A session lock lives
 * on its connection, so at most `poolSize` locks are held at once: the pool is the in-flight limit.
 *
 * Keys are the two-int form (a random namespace per run, a number per key name), so runs against a
 * shared Postgres never meet other users' locks. Both statements are named (prepared once per connection).
 */
export async function postgresLocker(options: {
  readonly url: string;
  readonly poolSize: number;
}): Promise<Locker> {
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize });
  const opened = await Promise.all(Array.from({ length: options.poolSize }, () => pool.connect()));
  for (const client of opened) client.release();
  const namespace = randomInt(1, 2 ** 31 - 1);
  const ids = new Map<string, number>();
  const idOf = (key: string) => {
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size + 1;
      ids.set(key, id);
    }
    return id;
  };
  return {
    acquire: async (key) => {
      const values = [namespace, idOf(key)];
      const client = await pool.connect();
      try {
        await client.query({ name: "bench_lock", text: "SELECT pg_advisory_lock($1, $2)", values });
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
      return {
        release: async () => {
          try {
            await client.query({ name: "bench_unlock", text: "SELECT pg_advisory_unlock($1, $2)", values });
          } finally {
            client.release();
          }
        },
      };
    },
    close: () => pool.end(),
  };
}
