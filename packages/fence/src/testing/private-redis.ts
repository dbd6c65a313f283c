/**
 * A redis-server of a test's own, for what must not happen on the shared one: SCRIPT FLUSH (it would
 * empty every other run's script cache) and Redis Cluster (the shared server is standalone). No
 * persistence; killed and its directory removed on stop().
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { freePort } from "@lock/testkit";
import { Cluster, Redis } from "ioredis";

export interface PrivateRedis {
  readonly port: number;
  /** A new standalone client (closed by stop()). */
  connect(): Promise<Redis>;
  /** A new Redis Cluster client; only for a server started with `cluster: true` (closed by stop()). */
  connectCluster(): Promise<Cluster>;
  stop(): Promise<void>;
}

/**
 * Starts redis-server on a free port. With `cluster`, as a one-node Redis Cluster that owns all 16384
 * slots: enough for Redis to enforce the one-slot rule on scripts, as every cluster does.
 */
export async function startPrivateRedis(options: { cluster?: boolean } = {}): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), "fence-redis-"));
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  args.push("--dir", dir);
  if (options.cluster) {
    // A lone node knows no address of its own to announce (CLUSTER SLOTS would say ""), so say it.
    args.push("--cluster-enabled", "yes", "--cluster-announce-ip", "127.0.0.1");
    args.push("--cluster-port", String(await freePort()));
    args.push("--cluster-config-file", join(dir, "nodes.conf"));
  }
  const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(child, "exit");
  try {
    await ready(child);
  } catch (error) {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const clients: (Redis | Cluster)[] = [];
  const connect = async () => {
    const client = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null });
    clients.push(client);
    await client.connect();
    return client;
  };
  if (options.cluster) {
    const admin = await connect();
    await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
    // The node serves the slots once its own view says so (its cluster cron, within a few seconds);
    // it needs no other node for that. There is no event to wait for, so poll.
    while (!/cluster_state:ok/.test(String(await admin.call("CLUSTER", "INFO")))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  return {
    port,
    connect,
    async connectCluster() {
      const cluster = new Cluster([{ host: "127.0.0.1", port }], { lazyConnect: true });
      clients.push(cluster);
      await cluster.connect();
      return cluster;
    },
    async stop() {
      for (const client of clients) client.disconnect();
      child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (/ready to accept connections/i.test(line)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
  });
}
