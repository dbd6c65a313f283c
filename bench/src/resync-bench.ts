import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { acquireMany, LockdCluster, type LockdProcess } from "@lock/testkit";

/**
 * A cluster holding a large table: 3 real lockd nodes at the default timing (100 ms heartbeats,
 * 500 ms peer timeout) filled to LOCKS held locks (default 1,000,000; the scale is 5M), then
 * a standby restarted (kill -9) so the active must send it the whole table while it serves, then the
 * active killed. Prints how long the snapshot took, the longest round trip a probe saw on the active
 * meanwhile (how long the active could not answer), what the restarted standby went through
 * meanwhile (its longest event-loop blocks and GC pauses, its heap's peak and its peak resident set:
 * the nodes run with testkit's loop-monitor.cjs), every role change, and the keys each node holds
 * after the failover. Run: `pnpm bench:resync [LOCKS]`. Needs about 1 GiB per million locks.
 */

const LOCKS = Number(process.argv[2] ?? 1_000_000);
const LEASE_S = 3_000;

async function fill(cluster: LockdCluster): Promise<number> {
  const started = Date.now();
  const client = await cluster.connect(0);
  const refused = await acquireMany(client, { prefix: "resync:", count: LOCKS, leaseSeconds: LEASE_S });
  if (refused > 0)
    console.log(`(${refused} acquires answered NO_ACTIVE during the fill and were sent again)`);
  client.close();
  return Date.now() - started;
}

/** Pings node `index` every 10 ms until stopped; the longest round trip seen. */
async function probe(cluster: LockdCluster, index: number): Promise<{ stop(): Promise<number> }> {
  const client = await cluster.connect(index);
  let running = true;
  let longest = 0;
  const loop = (async () => {
    while (running) {
      const start = performance.now();
      await client.request("P");
      longest = Math.max(longest, performance.now() - start);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      client.close();
      return longest;
    },
  };
}

async function keysOf(cluster: LockdCluster, index: number): Promise<number> {
  return Number((await cluster.info(index)).keys);
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return Date.now() - started;
}

/** Event-loop blocks of 20 ms or more are reported by the loop monitor (its default is 150 ms). */
const LOOP_MONITOR = fileURLToPath(new URL("../../packages/testkit/loop-monitor.cjs", import.meta.url));

/**
 * What the loop monitor wrote to `node`'s stderr from chunk `from` on: the longest blocks that began
 * after `since` (epoch ms: not its start, which loads every module in one go), the longest GC pause
 * and the heap's peak; and its peak resident set so far (VmHWM).
 */
function standbyReport(node: LockdProcess, from: number, since: number): string {
  const lines = node.stderr.slice(from).join("").split("\n");
  const field = (line: string, name: string) => Number(new RegExp(`${name}=(\\d+)`).exec(line)?.[1] ?? 0);
  const values = (prefix: string, name: string) =>
    lines.filter((line) => line.startsWith(prefix)).map((line) => field(line, name));
  const blocks = lines
    .filter((line) => line.startsWith("LOOPBLOCK"))
    .filter((line) => Date.parse(line.split(" ")[1]!) - field(line, "gapMs") >= since)
    .map((line) => field(line, "gapMs"))
    .sort((a, b) => b - a);
  const gcs = values("GC", "ms");
  const heap = values("HEAPPEAK", "heapMB");
  const status = readFileSync(`/proc/${node.pid}/status`, "utf8");
  const hwmMiB = Math.round(Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0) / 1024);
  return [
    `longest event-loop blocks ${blocks.slice(0, 5).join(", ") || "none"} ms (${blocks.length} of 20 ms or more, ${blocks.filter((ms) => ms >= 500).length} of 500 ms or more)`,
    `longest GC pause ${gcs.length === 0 ? "under 50" : Math.max(...gcs)} ms`,
    `heap peak ${heap.length === 0 ? "under 32" : Math.max(...heap)} MiB (sampled every 10 ms), peak RSS ${hwmMiB} MiB`,
  ].join("; ");
}

const roleChanges = (cluster: LockdCluster) =>
  cluster.nodes.flatMap((node, i) =>
    node.logs
      .filter((entry) => entry.msg === "role changed")
      .map((entry) => `node ${i} ${entry.role} (${entry.reason})`),
  );

const cluster = await LockdCluster.start({
  nodes: 3,
  env: { NODE_OPTIONS: `--require ${LOOP_MONITOR}`, LOCK_LOOP_BLOCK_MS: "20" },
  args: [
    "--heartbeat-interval",
    "0.1",
    "--peer-timeout",
    "0.5",
    "--max-keys",
    String(LOCKS + 1000),
    // One connection takes every lock.
    "--max-connection-keys",
    String(LOCKS + 1000),
  ],
});
try {
  await cluster.nodes[0]!.waitForServing({ since: 0 });
  console.log(`filling ${LOCKS} locks…`);
  const fillMs = await fill(cluster);
  await until(
    async () => (await keysOf(cluster, 1)) === LOCKS && (await keysOf(cluster, 2)) === LOCKS,
    600_000,
  );
  const before = roleChanges(cluster).length;
  console.log(`filled in ${fillMs} ms; standbys in sync`);

  const watch = await probe(cluster, 0);
  const standby = cluster.nodes[2]!;
  await standby.kill("SIGKILL");
  const stderrFrom = standby.stderr.length;
  await standby.restart();
  const servingSince = Date.now();
  const syncMs = await until(async () => (await keysOf(cluster, 2)) === LOCKS, 600_000);
  const longestProbe = await watch.stop();
  console.log(`restarted standby synced ${LOCKS} holders in ${syncMs} ms`);
  console.log(`the restarted standby meanwhile: ${standbyReport(standby, stderrFrom, servingSince)}`);
  console.log(`longest round trip on the active meanwhile: ${longestProbe.toFixed(1)} ms`);
  console.log(`role changes during the resync: ${roleChanges(cluster).length - before}`);

  const promoted = cluster.nodes[1]!.waitForServing({ timeoutMs: 60_000 });
  const killedAt = Date.now();
  await cluster.nodes[0]!.kill("SIGKILL");
  await promoted;
  console.log(`kill -9 of the active: node 1 serving after ${Date.now() - killedAt} ms`);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const actives = [];
  for (const i of [1, 2]) {
    const info = await cluster.info(i);
    if (info.role === "active") actives.push(i);
    console.log(`node ${i}: ${info.role}, ${info.keys} keys`);
  }
  console.log(`actives after 3 s: ${actives.length}`);
  console.log("role changes:", roleChanges(cluster));
} finally {
  await cluster.dispose();
}
