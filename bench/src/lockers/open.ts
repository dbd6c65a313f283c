import type { Locker, LockSystem } from "./locker.js";

/** How a load worker reaches one system, and how many connections and sessions it opens. */
export interface LockerTarget {
  readonly system: LockSystem;
  /** lockd, Redis, etcd: their port on 127.0.0.1. */
  readonly port?: number | undefined;
  /** Postgres: a connection string. */
  readonly url?: string | undefined;
  /**
   * lockd: LockClient instances; Postgres: the pool's size; etcd: leases (sessions), with one HTTP
   * connection per loop in flight. Redis always uses one connection.
   */
  readonly connections: number;
  /** etcd: HTTP connections to keep (the loops in flight). */
  readonly sockets?: number | undefined;
  /** lockd: another build's @lock/client module. */
  readonly clientModule?: string | undefined;
}

/** Opens the system's locker, loading only its own client library (the others' stay out of the process). */
export async function openLocker(target: LockerTarget): Promise<Locker> {
  switch (target.system) {
    case "lockd":
      return (await import("./lockd.js")).lockdLocker({
        port: target.port!,
        clients: target.connections,
        clientModule: target.clientModule,
      });
    case "redis":
      return (await import("./redis.js")).redisLocker({ port: target.port! });
    case "postgres":
      return (await import("./postgres.js")).postgresLocker({
        url: target.url!,
        poolSize: target.connections,
      });
    case "etcd":
      return (await import("./etcd.js")).etcdLocker({
        port: target.port!,
        sessions: target.connections,
        sockets: target.sockets ?? target.connections,
      });
  }
}
