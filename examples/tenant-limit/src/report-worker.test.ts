/** The README's worker (report-worker.ts), run as it is on lockd, PostgreSQL and pg-boss. */
import { expect, it } from "vitest";
import { type ReportJob, workReports } from "./report-worker.js";
import { worldPerTest } from "./testing/world.js";

const newWorld = worldPerTest();

it("writes each tenant's monthly totals, each job fenced on its permit's slot", async () => {
  const world = await newWorld();
  const { pool } = world;
  await pool.query(
    "CREATE TABLE invoices (tenant text NOT NULL, month text NOT NULL, amount numeric NOT NULL)",
  );
  await pool.query(
    "CREATE TABLE reports (tenant text, month text, total numeric NOT NULL, PRIMARY KEY (tenant, month))",
  );
  await pool.query(`INSERT INTO invoices VALUES ('acme', '2026-03', 10), ('acme', '2026-03', 5),
    ('acme', '2026-04', 7), ('globex', '2026-04', 100)`);
  const boss = await world.startBoss();
  await boss.createQueue("reports");
  const jobs: ReportJob[] = ["acme", "globex"].flatMap((tenant) =>
    ["2026-03", "2026-04", "2026-05"].map((month) => ({ tenant, month })),
  );
  const ids = (await boss.insert(
    "reports",
    jobs.map((data) => ({ data })),
    { returnId: true },
  ))!;
  await workReports(boss, world.lockClient(), pool);
  const spy = boss.getSpy<ReportJob>("reports");
  const settled = (id: string) =>
    Promise.race([
      spy.waitForJobWithId(id, "completed"),
      spy.waitForJobWithId(id, "failed").then(({ output }) => {
        throw new Error(`job ${id} failed: ${JSON.stringify(output)}`);
      }),
    ]);
  await Promise.all(ids.map(settled));

  const { rows } = await pool.query("SELECT tenant, month, total::text FROM reports ORDER BY tenant, month");
  expect(rows).toEqual([
    { tenant: "acme", month: "2026-03", total: "15" },
    { tenant: "acme", month: "2026-04", total: "7" },
    { tenant: "acme", month: "2026-05", total: "0" },
    { tenant: "globex", month: "2026-03", total: "0" },
    { tenant: "globex", month: "2026-04", total: "100" },
    { tenant: "globex", month: "2026-05", total: "0" },
  ]);
  // The fence kept one token per slot the jobs held, never one for a whole tenant.
  const fences = await pool.query<{ resource: string }>("SELECT resource FROM lock_fence");
  expect(fences.rows.length).toBeGreaterThanOrEqual(2);
  for (const { resource } of fences.rows) expect(resource).toMatch(/^tenant:(acme|globex) slot [0-4]$/);
});
