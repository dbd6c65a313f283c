/**
 * The recipe on a real lockd started with --key-families and its admin server: clients take keys of
 * three families, one key is contended, and the report shows each family with its counts.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { LockClient } from "@lock/client";
import { LockdProcess } from "@lock/testkit";
import { afterEach, expect, it } from "vitest";
import { parseFamilies, scrapeFamilies } from "./families.js";

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

it("reports each key family's grants, holders and waiters from a real lockd's /metrics", async () => {
  const lockd = await LockdProcess.start({
    admin: true,
    args: ["--key-families", "orders=^orders:,tenant=^tenant:[^:]+:"],
  });
  cleanup.push(() => lockd.dispose());
  const adminUrl = `http://127.0.0.1:${lockd.adminPort}`;
  const [clientA, clientB] = [lockd.address, lockd.address].map((address) => {
    const client = new LockClient({ servers: [address] });
    cleanup.push(() => client.close());
    return client;
  });
  if (!clientA || !clientB) throw new Error("two clients");

  for (let order = 1; order <= 20; order++) {
    const lock = await clientA.acquire(`orders:${order}`, { leaseMs: 10_000 });
    await lock.release();
  }
  const held = await clientA.acquire("tenant:acme:report", { leaseMs: 10_000 });
  const waiter = clientB.acquire("tenant:acme:report", { leaseMs: 10_000 });
  // lockd answers a connection's requests in order, all but a waiting acquire at once: once this
  // reply is in, B's acquire above is queued.
  const leader = await clientB.acquire("leader", { leaseMs: 10_000 });

  expect(await scrapeFamilies(adminUrl)).toEqual([
    { family: "tenant", grants: 1, meanWaitMs: 0, held: 1, waiting: 1 },
    { family: "leader", grants: 1, meanWaitMs: 0, held: 1, waiting: 0 },
    { family: "orders", grants: 20, meanWaitMs: 0, held: 0, waiting: 0 },
  ]);

  await held.release();
  await (await waiter).release();
  await leader.release();
  const after = await scrapeFamilies(adminUrl);
  expect(after.map(({ family, grants, held, waiting }) => ({ family, grants, held, waiting }))).toEqual([
    { family: "orders", grants: 20, held: 0, waiting: 0 },
    { family: "tenant", grants: 2, held: 0, waiting: 0 },
    { family: "leader", grants: 1, held: 0, waiting: 0 },
  ]);
  // B waited for A's release: a wait above 0, in the tenant family's mean.
  expect(after.find((row) => row.family === "tenant")?.meanWaitMs).toBeGreaterThan(0);

  // The script prints the same as a table.
  const script = fileURLToPath(new URL("../dist/report.js", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [script, adminUrl]);
  expect(stdout.split("\n")[0]).toBe("family  waiting  held  grants  mean wait ms");
  expect(stdout.split("\n")[1]).toBe("orders  0        0     20      0.0");
});

it("sums a family over holder kinds and reads escaped label values", () => {
  const text = [
    'lockd_key_family_wait_seconds_count{family="a\\"b",kind="exclusive"} 3',
    'lockd_key_family_wait_seconds_count{family="a\\"b",kind="shared"} 1',
    'lockd_key_family_wait_seconds_sum{family="a\\"b",kind="shared"} 2',
    'lockd_key_family_held{family="a\\"b",kind="shared"} 4',
    'lockd_key_family_waiting{family="other"} 7',
  ].join("\n");
  expect(parseFamilies(text)).toEqual([
    { family: "other", grants: 0, meanWaitMs: 0, held: 0, waiting: 7 },
    { family: 'a"b', grants: 4, meanWaitMs: 500, held: 4, waiting: 0 },
  ]);
});
