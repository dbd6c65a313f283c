import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineClient } from "@lock/testkit";
import { afterEach } from "vitest";
import { LockServer, type LockServerOptions } from "./server.js";

/** In-process servers and raw clients for the net tests; everything is closed after each test. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs `cleanup` after the current test, before the cleanups registered earlier. */
export function onCleanup(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup);
}

/** A LockServer on a free port with a fresh data directory. */
export async function serve(options: Omit<LockServerOptions, "dataDir" | "port"> = {}): Promise<LockServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-net-"));
  onCleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await LockServer.start({ port: 0, dataDir, ...options });
  onCleanup(() => server.close(100));
  return server;
}

export async function client(server: LockServer): Promise<LineClient> {
  const c = await LineClient.connect(server.port);
  onCleanup(() => c.close());
  return c;
}
