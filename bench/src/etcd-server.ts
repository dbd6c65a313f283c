import { execFile } from "node:child_process";
import http from "node:http";
import { promisify } from "node:util";
import { EtcdCluster } from "@lock/testkit";
import { postJson } from "./lockers/http-json.js";

/** A single etcd for a bench: its client port, a compaction between runs, and how to stop it. */
export interface EtcdServed {
  readonly port: number;
  readonly description: string;
  /** Compacts away the history the last run wrote (every lock is a put and a delete). */
  compact(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One etcd member (`EtcdCluster` from @lock/testkit: the Debian package's etcd, a temporary data
 * directory, default fsync), pinned to `cpus` once started: `taskset -a` sets every thread the Go
 * runtime has, and threads it starts later inherit the set.
 */
export async function startEtcd(cpus: string): Promise<EtcdServed> {
  const cluster = await EtcdCluster.start({ members: 1 });
  const member = cluster.members[0]!;
  await promisify(execFile)("taskset", ["-a", "-p", "-c", cpus, String(member.child.pid)]);
  const port = Number(member.endpoint.split(":")[1]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = <T>(path: string, body: unknown) =>
    postJson<T>(agent, { host: "127.0.0.1", port }, path, body);
  let compacted = "0";
  return {
    port,
    description: `a single etcd (${member.endpoint}, cpu ${cpus}, all threads)`,
    compact: async () => {
      const { header } = await post<{ header: { revision: string } }>("/v3/kv/range", { key: "AA==" });
      // Compacting again at the same revision is an error in etcd: only when something was written.
      if (header.revision === compacted) return;
      await post("/v3/kv/compaction", { revision: header.revision });
      compacted = header.revision;
    },
    stop: async () => {
      agent.destroy();
      await cluster.dispose();
    },
  };
}
