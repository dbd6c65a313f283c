import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/**
 * A redis-server of our own on a Unix socket, no persistence: examples that use fixed key names
 * cannot collide with anyone else's keys on the shared Redis, and no TCP port has to be picked.
 * `url` is the socket path, which ioredis takes in place of a URL.
 */
export class PrivateRedis {
  readonly url: string;
  readonly #child: ChildProcess;
  readonly #dir: string;

  private constructor(child: ChildProcess, dir: string, url: string) {
    this.#child = child;
    this.#dir = dir;
    this.url = url;
  }

  static async start(): Promise<PrivateRedis> {
    const dir = mkdtempSync(join(tmpdir(), "lock-redis-"));
    const socket = join(dir, "redis.sock");
    const child = spawn(
      "redis-server",
      ["--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no", "--dir", dir],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (/ready to accept connections/i.test(line)) resolve();
      });
      child.once("exit", (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
    });
    return new PrivateRedis(child, dir, socket);
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.once("exit", resolve));
    this.#child.kill("SIGKILL");
    await exited;
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
