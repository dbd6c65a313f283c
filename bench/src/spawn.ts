import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const BENCH_DIST = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = join(BENCH_DIST, "..", "..");
export const LOCKD_MAIN = join(REPO_ROOT, "apps", "lockd", "dist", "main.js");

/** A child process pinned to `cpus` with taskset (e.g. "0"), or unpinned when cpus is undefined. */
export function spawnPinned(cpus: string | undefined, args: string[]): ChildProcess {
  const [command, argv] =
    cpus === undefined ? [process.execPath, args] : ["taskset", ["-c", cpus, process.execPath, ...args]];
  return spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] });
}

/** Resolves with the first stdout line that parses as JSON and passes `accept`. */
export function firstJsonLine<T>(
  child: ChildProcess,
  accept: (value: Record<string, unknown>) => boolean,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      try {
        const value = JSON.parse(line) as Record<string, unknown>;
        if (accept(value)) resolve(value as T);
      } catch {
        // Not JSON: ignore.
      }
    });
    child.once("exit", (code) => reject(new Error(`process exited (${code}) before reporting`)));
  });
}

export interface Served {
  readonly port: number;
  /** lockd's admin port, when started with --admin. */
  readonly adminPort?: number | undefined;
  readonly child: ChildProcess;
  stop(): void;
}

/** A lockd pinned to `cpus`; `main` runs another build's lockd (its apps/lockd/dist/main.js). */
export async function startLockd(
  cpus: string | undefined,
  extra: string[] = [],
  main: string = LOCKD_MAIN,
): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-bench-"));
  const child = spawnPinned(cpus, [main, "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...extra]);
  const ready = await firstJsonLine<{ port: number; adminPort: number | null }>(
    child,
    (v) => v.msg === "lockd ready",
  );
  return {
    port: ready.port,
    adminPort: ready.adminPort ?? undefined,
    child,
    stop: () => child.kill("SIGKILL"),
  };
}

/** A dedicated redis-server, pinned like lockd; the system Redis on 6379 is shared, so not that. */
export async function startRedis(cpus: string): Promise<Served> {
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  const child = spawn("taskset", ["-c", cpus, "redis-server", ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.includes("Ready to accept connections")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited (${code}); is it installed?`)));
  });
  return { port, child, stop: () => child.kill("SIGKILL") };
}

export async function startEchoServer(cpus: string | undefined): Promise<Served> {
  const child = spawnPinned(cpus, [join(BENCH_DIST, "echo-server.js")]);
  const ready = await firstJsonLine<{ port: number }>(child, (v) => typeof v.port === "number");
  return { port: ready.port, child, stop: () => child.kill("SIGKILL") };
}

export interface LoadResult {
  ops: number;
  seconds: number;
  p50: number;
  p99: number;
  samples: number;
}

export async function runLoad(
  cpus: string | undefined,
  options: {
    port: number;
    mode: "cycle" | "contend";
    connections: number;
    inflight: number;
    durationMs: number;
    keys?: "reused" | "unique";
  },
): Promise<LoadResult> {
  const child = spawnPinned(cpus, [join(BENCH_DIST, "load-worker.js"), JSON.stringify(options)]);
  return firstJsonLine<LoadResult>(child, (v) => typeof v.ops === "number");
}

/** A TCP port that was free a moment ago on 127.0.0.1 (for servers that need their port up front). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address ? address.port : 0;
}
