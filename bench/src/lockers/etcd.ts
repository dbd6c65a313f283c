import http from "node:http";
import { postJson } from "./http-json.js";
import type { Locker } from "./locker.js";
import { BENCH_LEASE_MS } from "./locker.js";

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/**
 * etcd's own lock service (v3 `Lock`/`Unlock`, served by every etcd) through its JSON gateway over
 * plain HTTP: `/v3/lock/lock` with a lease waits until the caller holds the name and answers with its
 * lock key; `/v3/lock/unlock` deletes that key. The lease is the session, as in etcd's concurrency
 * recipe: `sessions` leases granted before the run, contender n on lease n mod sessions. Contenders on
 * one name need a lease each (a lock key is the name plus the lease id); uncontended loops on names of
 * their own can share one, as one application process shares its session.
 *
 * HTTP/1.1 does not pipeline in Node, so every request in flight needs its own connection: the agent
 * keeps up to `sockets` open (keep-alive).
 */
export async function etcdLocker(options: {
  readonly port: number;
  readonly sessions: number;
  readonly sockets: number;
}): Promise<Locker> {
  const endpoint = { host: "127.0.0.1", port: options.port };
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.sockets });
  const post = <T>(path: string, body: unknown) => postJson<T>(agent, endpoint, path, body);
  const ttl = Math.ceil(BENCH_LEASE_MS / 1000);
  const leases = await Promise.all(
    Array.from(
      { length: options.sessions },
      async () => (await post<{ ID: string }>("/v3/lease/grant", { TTL: ttl })).ID,
    ),
  );
  return {
    acquire: async (key, contender) => {
      const lease = leases[contender % leases.length]!;
      const { key: lockKey } = await post<{ key: string }>("/v3/lock/lock", { name: base64(key), lease });
      return { release: () => post("/v3/lock/unlock", { key: lockKey }) };
    },
    close: async () => {
      // Revoking a lease deletes whatever lock keys it still carries.
      await Promise.all(leases.map((ID) => post("/v3/lease/revoke", { ID })));
      agent.destroy();
    },
  };
}
