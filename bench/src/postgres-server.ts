import { execFile, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { freePort } from "./spawn.js";

/** A Postgres for a bench: its connection string, what it is (for the output), and how to stop it. */
export interface PostgresServed {
  readonly url: string;
  readonly description: string;
  stop(): Promise<void>;
}

/** Enough for a pool of 1024 connections and a few more (psql, a pool's spare). */
const MAX_CONNECTIONS = 1100;
const MACHINE_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The bin folder of the newest Postgres installed the Debian way, if any (BENCH_PG_BIN overrides). */
export function postgresBin(): string | undefined {
  if (process.env.BENCH_PG_BIN) return process.env.BENCH_PG_BIN;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

/**
 * A dedicated Postgres pinned to `cpus` (every backend inherits the postmaster's CPU set), in a
 * temporary data directory, on a free port, fsync off (advisory locks write nothing anyway), room
 * for 1100 connections; removed by `stop()`. Postgres refuses to run as root, so as root it runs as
 * the `postgres` user (setpriv). Without the binaries, or with BENCH_POSTGRES=machine, the machine's
 * Postgres (PG_URL, default 127.0.0.1:5432 db test), unpinned: the caller must say so.
 */
export async function startPostgres(cpus: string): Promise<PostgresServed> {
  const bin = postgresBin();
  if (process.env.BENCH_POSTGRES === "machine" || bin === undefined) {
    return {
      url: MACHINE_URL,
      description: `the machine's Postgres (${new URL(MACHINE_URL).host}, unpinned: pinning differs)`,
      stop: async () => {},
    };
  }
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "pg-bench-"));
  const asPostgres = (command: string, args: string[]): [string, string[]] =>
    asRoot
      ? ["setpriv", ["--reuid", "postgres", "--regid", "postgres", "--init-groups", command, ...args]]
      : [command, args];
  if (asRoot) chownSync(dir, Number(await idOf("-u")), Number(await idOf("-g")));
  const dataDir = join(dir, "data");
  await promisify(execFile)(
    ...asPostgres(join(bin, "initdb"), [
      "-D",
      dataDir,
      "-A",
      "trust",
      "-U",
      "postgres",
      "--no-sync",
      "-E",
      "UTF8",
    ]),
  );
  const port = await freePort();
  // biome-ignore format: one flag and its value a line
  const [command, args] = asPostgres("taskset", ["-c", cpus, join(bin, "postgres"),
    "-D", dataDir,
    "-p", String(port),
    "-k", dir,
    "-c", "listen_addresses=127.0.0.1",
    "-c", `max_connections=${MAX_CONNECTIONS}`,
    "-c", "fsync=off",
  ]);
  // setpriv and taskset exec: the child is the postmaster itself.
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const output: string[] = [];
    createInterface({ input: child.stderr! }).on("line", (line) => {
      output.push(line);
      if (line.includes("ready to accept connections")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`postgres exited (${code}):\n${output.join("\n")}`)));
  });
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    description: `a dedicated Postgres (${bin}, cpu ${cpus}, max_connections ${MAX_CONNECTIONS}, fsync off)`,
    stop: async () => {
      child.kill("SIGQUIT"); // immediate shutdown: there is nothing to keep
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function idOf(flag: "-u" | "-g"): Promise<string> {
  const { stdout } = await promisify(execFile)("id", [flag, "postgres"]);
  return stdout.trim();
}
