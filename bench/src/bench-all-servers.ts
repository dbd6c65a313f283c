import { startEtcd } from "./etcd-server.js";
import type { LockSystem } from "./lockers/locker.js";
import { startPostgres } from "./postgres-server.js";
import { startLockd, startRedis } from "./spawn.js";

/** Where each system's server listens for this run. */
export interface Servers {
  readonly ports: Partial<Record<LockSystem, number>>;
  readonly postgresUrl?: string;
  readonly descriptions: Record<string, string>;
  /** Housekeeping between runs (etcd: compaction). */
  afterRun(system: LockSystem): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Every system's server for one bench:all run, each pinned to `cpu`, started once and kept for the
 * whole run (lockd is always started: every ratio is against it).
 */
export async function startServers(systems: readonly LockSystem[], cpu: string): Promise<Servers> {
  const stops: (() => unknown)[] = [];
  const ports: Partial<Record<LockSystem, number>> = {};
  const descriptions: Record<string, string> = {};
  let postgresUrl: string | undefined;
  let compactEtcd = async () => {};
  try {
    const lockd = await startLockd(cpu);
    stops.push(() => lockd.stop());
    ports.lockd = lockd.port;
    descriptions.lockd = `lockd (cpu ${cpu})`;
    if (systems.includes("redis")) {
      const redis = await startRedis(cpu);
      stops.push(() => redis.stop());
      ports.redis = redis.port;
      descriptions.redis = `a dedicated redis-server (cpu ${cpu}, no persistence)`;
    }
    if (systems.includes("postgres")) {
      const postgres = await startPostgres(cpu);
      stops.push(() => postgres.stop());
      postgresUrl = postgres.url;
      descriptions.postgres = postgres.description;
    }
    if (systems.includes("etcd")) {
      const etcd = await startEtcd(cpu);
      stops.push(() => etcd.stop());
      ports.etcd = etcd.port;
      descriptions.etcd = etcd.description;
      compactEtcd = () => etcd.compact();
    }
  } catch (error) {
    for (const stop of stops.reverse()) await stop();
    throw error;
  }
  return {
    ports,
    ...(postgresUrl === undefined ? {} : { postgresUrl }),
    descriptions,
    afterRun: async (system) => {
      if (system === "etcd") await compactEtcd();
    },
    stop: async () => {
      for (const stop of stops.reverse()) await stop();
    },
  };
}
