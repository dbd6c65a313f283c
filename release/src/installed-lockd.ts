import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** What the `lockd ready` line says about the bound ports. */
export interface LockdReady {
  readonly port: number;
  readonly adminPort: number | null;
}

/**
 * An installed `lockd` (a bin from a scratch app or a global prefix, not the workspace's dist/),
 * started with exactly the arguments a user would give it: unlike the testkit's LockdProcess it adds
 * no `--listen` or `--data-dir`, so a config file decides them. Resolves once lockd logs
 * `lockd ready`; `stop()` sends SIGTERM, as a service manager does.
 */
export class InstalledLockd {
  readonly ready: LockdReady;
  /** Every JSON line lockd logged so far. */
  readonly logs: Array<Record<string, unknown>>;
  readonly #lineListeners: Array<() => void>;
  readonly #child: ChildProcess;
  readonly #exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    child: ChildProcess,
    ready: LockdReady,
    exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
    log: { lines: Array<Record<string, unknown>>; listeners: Array<() => void> },
  ) {
    this.logs = log.lines;
    this.#lineListeners = log.listeners;
    this.#child = child;
    this.ready = ready;
    this.#exit = exit;
  }

  get address(): string {
    return `127.0.0.1:${this.ready.port}`;
  }

  static async start(
    command: string,
    args: readonly string[],
    options: { cwd?: string; env?: Readonly<Record<string, string>> } = {},
  ): Promise<InstalledLockd> {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? "", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    const stderr: string[] = [];
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
    const log = { lines: [] as Array<Record<string, unknown>>, listeners: [] as Array<() => void> };
    const ready = await new Promise<LockdReady>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (!line.startsWith("{")) return;
        const entry = JSON.parse(line);
        log.lines.push(entry);
        for (const listener of [...log.listeners]) listener();
        if (entry.msg === "lockd ready") resolve({ port: entry.port, adminPort: entry.adminPort });
      });
      void exit.then(({ code, signal }) =>
        reject(
          new Error(`${command} exited before ready (code ${code}, signal ${signal}): ${stderr.join("")}`),
        ),
      );
      child.once("error", reject);
    });
    return new InstalledLockd(child, ready, exit, log);
  }

  /** The first log line (already logged or to come) with this `msg`. */
  waitForLog(msg: string, timeoutMs = 15_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const entry = this.logs.find((line) => line.msg === msg);
        if (entry === undefined) return;
        this.#lineListeners.splice(this.#lineListeners.indexOf(check), 1);
        clearTimeout(timer);
        resolve(entry);
      };
      const timer = setTimeout(() => {
        this.#lineListeners.splice(this.#lineListeners.indexOf(check), 1);
        reject(new Error(`lockd logged no "${msg}" within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#lineListeners.push(check);
      check();
    });
  }

  /** Graceful stop (SIGTERM); its exit. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGTERM");
    return this.#exit;
  }
}
