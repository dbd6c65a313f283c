import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { keepLogs } from "./log-dir.js";
import { LOCKD_MAIN } from "./paths.js";

export interface LockdOptions {
  /** Extra flags, e.g. ["--max-pending", "4"]. */
  readonly args?: readonly string[];
  /** Extra environment, e.g. { LOCKD_AUTH_TOKEN: "at-least-16-bytes" }. */
  readonly env?: Readonly<Record<string, string>>;
  /** Data directory; a fresh temporary one (removed on dispose) if not given. */
  readonly dataDir?: string;
  /** Port to listen on; 0 (any free port) by default. A restart keeps the port it got. */
  readonly port?: number;
  /** Serve the admin HTTP server on a free port. */
  readonly admin?: boolean;
  /** The lockd entry point to run: another build (an upgrade test's previous release); default LOCKD_MAIN. */
  readonly main?: string;
}

/** What lockd logs once it serves: its bound ports and epoch. */
export interface ReadyInfo {
  readonly port: number;
  readonly adminPort: number | null;
  readonly epoch: string;
}

/**
 * A real lockd process for tests: started on a free port with its own data directory; it can be
 * killed (any signal), paused (SIGSTOP), resumed, and restarted on the same port and data
 * directory. `await using` (or `dispose()`) kills it and removes a temporary data directory.
 */
export class LockdProcess {
  readonly dataDir: string;
  readonly logs: Array<Record<string, unknown>> = [];
  readonly #logWaiters: Array<{
    match(entry: Record<string, unknown>): boolean;
    resolve(entry: Record<string, unknown>): void;
  }> = [];
  readonly stderr: string[] = [];
  #child: ChildProcess | undefined;
  #ready: ReadyInfo | undefined;
  #exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  readonly #options: LockdOptions;
  readonly #ownsDataDir: boolean;
  /** The entry point of the current (or last) run: `restart({ main })` changes it, as an upgrade would. */
  #main: string;
  /** The extra flags of the current (or last) run: `restart({ args })` changes them (a new --peers). */
  #args: readonly string[];

  private constructor(options: LockdOptions) {
    this.#options = options;
    this.#ownsDataDir = options.dataDir === undefined;
    this.#main = options.main ?? LOCKD_MAIN;
    this.#args = options.args ?? [];
    this.dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "lockd-test-"));
  }

  static async start(options: LockdOptions = {}): Promise<LockdProcess> {
    const lockd = new LockdProcess(options);
    await lockd.#spawn(options.port ?? 0);
    return lockd;
  }

  get port(): number {
    if (!this.#ready) throw new Error("lockd is not running");
    return this.#ready.port;
  }

  get adminPort(): number {
    const port = this.#ready?.adminPort;
    if (port == null) throw new Error("lockd was started without admin");
    return port;
  }

  get ready(): ReadyInfo {
    if (!this.#ready) throw new Error("lockd is not running");
    return this.#ready;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Sends `signal` and waits for the process to exit. */
  async kill(
    signal: NodeJS.Signals = "SIGKILL",
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const exit = this.#exit;
    if (!this.#child || !exit) throw new Error("lockd is not running");
    this.#child.kill(signal);
    return exit;
  }

  /** Graceful stop (SIGTERM), as an operator would do it. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.kill("SIGTERM");
  }

  pause(): void {
    this.#child?.kill("SIGSTOP");
  }

  resume(): void {
    this.#child?.kill("SIGCONT");
  }

  /**
   * Starts lockd again on the same port, data directory and flags (after kill or stop); with
   * `main`, from another build from now on (an upgrade, one node at a time); with `args`, with these
   * extra flags instead (a membership change: a new --peers).
   */
  async restart({ main, args }: { main?: string; args?: readonly string[] } = {}): Promise<void> {
    if (this.#child && this.#child.exitCode === null && this.#child.signalCode === null) {
      throw new Error("lockd is still running");
    }
    if (main !== undefined) this.#main = main;
    if (args !== undefined) this.#args = args;
    await this.#spawn(this.#ready?.port ?? this.#options.port ?? 0);
  }

  /**
   * Resolves with the first log entry (from now on, or already logged since `since`) that `match`
   * accepts, e.g. `lockd.waitForLog((e) => e.msg === "role changed" && e.role === "active")`.
   */
  waitForLog(
    match: (entry: Record<string, unknown>) => boolean,
    { since = this.logs.length, timeoutMs = 10_000 }: { since?: number; timeoutMs?: number } = {},
  ): Promise<Record<string, unknown>> {
    const earlier = this.logs.slice(since).find(match);
    if (earlier) return Promise.resolve(earlier);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#logWaiters.splice(this.#logWaiters.indexOf(waiter), 1);
        reject(new Error(`no matching log entry within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter = {
        match,
        resolve: (entry: Record<string, unknown>) => {
          clearTimeout(timer);
          resolve(entry);
        },
      };
      this.#logWaiters.push(waiter);
    });
  }

  /** Waits for this node to log a role change to `role`. */
  waitForRole(
    role: "active" | "standby",
    options?: { since?: number; timeoutMs?: number },
  ): Promise<Record<string, unknown>> {
    return this.waitForLog((entry) => entry.msg === "role changed" && entry.role === role, options);
  }

  /**
   * Waits for this cluster node to serve as the active: promoted and not held (a new epoch ahead of
   * the clock, or a stall being confirmed). What a test wants before it sends lock verbs.
   */
  waitForServing(options?: { since?: number; timeoutMs?: number }): Promise<Record<string, unknown>> {
    return this.waitForLog((entry) => entry.msg === "serving", options);
  }

  /** Waits for this standby to log that it follows `active` (redirects clients there). */
  waitForFollowing(
    active: string,
    options?: { since?: number; timeoutMs?: number },
  ): Promise<Record<string, unknown>> {
    return this.waitForLog((entry) => entry.msg === "following active" && entry.active === active, options);
  }

  /** The process's exit, once it exits. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.#exit) throw new Error("lockd was never started");
    return this.#exit;
  }

  async dispose(): Promise<void> {
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await this.#exit;
    }
    if (this.#ownsDataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }

  async #spawn(port: number): Promise<void> {
    const args = [
      this.#main,
      "--listen",
      `127.0.0.1:${port}`,
      "--data-dir",
      this.dataDir,
      ...(this.#options.admin ? ["--admin", "127.0.0.1:0"] : []),
      ...this.#args,
    ];
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH ?? "", ...this.#options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#child = child;
    this.#ready = undefined;
    this.#exit = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => this.stderr.push(chunk));
    keepLogs(child, args);
    const lines = createInterface({ input: child.stdout! });
    this.#ready = await new Promise<ReadyInfo>((resolve, reject) => {
      lines.on("line", (line) => {
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line);
        } catch {
          return;
        }
        this.logs.push(entry);
        for (const waiter of [...this.#logWaiters]) {
          if (waiter.match(entry)) {
            this.#logWaiters.splice(this.#logWaiters.indexOf(waiter), 1);
            waiter.resolve(entry);
          }
        }
        if (entry.msg === "lockd ready") {
          resolve({
            port: entry.port as number,
            adminPort: entry.adminPort as number | null,
            epoch: entry.epoch as string,
          });
        }
      });
      this.#exit!.then(({ code, signal }) =>
        reject(
          new Error(`lockd exited before ready (code ${code}, signal ${signal}): ${this.stderr.join("")}`),
        ),
      );
    });
  }
}
