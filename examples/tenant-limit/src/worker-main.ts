import { LockClient } from "@lock/client";
import { createFenceTable } from "@lock/fence/postgres";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { workReports } from "./report-worker.js";

const pool = new pg.Pool({ connectionString: process.env.PG_URL });
await createFenceTable(pool); // once, like any migration (packages/fence/README.md, "Migration")
const boss = new PgBoss(process.env.PG_URL!);
boss.on("error", (error) => console.error("pg-boss", error));
await boss.start();
await boss.createQueue("reports", { retryLimit: 3, retryDelay: 5 });
const client = new LockClient({ servers: ["10.0.0.5:7420", "10.0.0.6:7420"] });
await workReports(boss, client, pool);
process.once("SIGTERM", async () => {
  await boss.stop(); // waits for the running jobs; each releases its permit as it ends
  await client.close();
  await pool.end();
});

// Anywhere, any process:
await boss.send("reports", { tenant: "acme", month: "2026-04" });
