import { pathToFileURL } from "node:url";
import type { Held, Locker } from "./locker.js";
import { BENCH_LEASE_MS } from "./locker.js";

/**
 * `@lock/client` against lockd: `clients` LockClient instances (one connection each), contender n on
 * client n mod clients; each client pipelines its contenders' requests on its one connection.
 * `clientModule` loads another build's client (its packages/client/dist/index.js) for bench:builds.
 */
export async function lockdLocker(options: {
  readonly port: number;
  readonly clients: number;
  readonly clientModule?: string | undefined;
}): Promise<Locker> {
  const { LockClient } = (await import(
    options.clientModule === undefined ? "@lock/client" : pathToFileURL(options.clientModule).href
  )) as typeof import("@lock/client");
  const clients = Array.from(
    { length: options.clients },
    () => new LockClient({ servers: [`127.0.0.1:${options.port}`] }),
  );
  await Promise.all(
    clients.map((client) => new Promise<void>((resolve) => client.once("connect", () => resolve()))),
  );
  return {
    acquire: (key, contender): Promise<Held> =>
      clients[contender % clients.length]!.acquire(key, { leaseMs: BENCH_LEASE_MS }),
    close: () => Promise.all(clients.map((client) => client.close())),
  };
}
