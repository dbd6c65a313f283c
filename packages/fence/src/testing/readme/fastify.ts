import { fencePlugin, fencingHeaders } from "@lock/fence/fastify";
import { createFenceTable, type PostgresStore, postgresStore } from "@lock/fence/postgres";
import Fastify from "fastify";
import pg from "pg";

// Once per app: request.fenced((tx) => ...) gets this store's transaction type, here the pg client.
declare module "@lock/fence/fastify" {
  interface FencePluginStore {
    store: PostgresStore;
  }
}

const pool = new pg.Pool({
  connectionString: process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
});
await createFenceTable(pool); // once, like any migration
await pool.query("CREATE TABLE IF NOT EXISTS invoices (id text PRIMARY KEY, status text NOT NULL)");

const app = Fastify();
await app.register(fencePlugin, { store: postgresStore({ pool }) }); // or memoryStore(), redisStore(...)

app.put<{ Params: { id: string } }>(
  "/invoices/:id",
  { config: { fence: { resource: (request) => `invoices:${request.params.id}` } } },
  async (request) => {
    // Writes that must be atomic with the check go through request.fenced(): same store, resource, token.
    await request.fenced((tx) =>
      tx.query("INSERT INTO invoices VALUES ($1, 'paid') ON CONFLICT (id) DO UPDATE SET status = 'paid'", [
        request.params.id,
      ]),
    );
    return { token: String(request.fencingToken), resource: request.fenceResource };
  },
);

const address = await app.listen({ port: 0, host: "127.0.0.1" });
const lock = { token: 34n }; // from the lock client
const invoice = `${address}/invoices/7`;
const ok = await fetch(invoice, { method: "PUT", headers: fencingHeaders(lock) });
const stale = await fetch(invoice, { method: "PUT", headers: fencingHeaders({ token: 33n }) });
console.log(ok.status, await ok.json()); // 200 { token: '34', resource: 'invoices:7' }
console.log(stale.status, await stale.json()); // 409 { statusCode: 409, code: 'FENCE_STALE_TOKEN', error: 'Conflict', message: ... }
await app.close();
await pool.end();
