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
  readonly #child: ChildProcess;
  readonly #exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    child: ChildProcess,
    ready: LockdReady,
    exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
  ) {
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
    const ready = await new Promise<LockdReady>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (!line.includes('"msg":"lockd ready"')) return;
        const entry = JSON.parse(line);
        resolve({ port: entry.port, adminPort: entry.adminPort });
      });
      void exit.then(({ code, signal }) =>
        reject(
          new Error(`${command} exited before ready (code ${code}, signal ${signal}): ${stderr.join("")}`),
        ),
      );
      child.once("error", reject);
    });
    return new InstalledLockd(child, ready, exit);
  }

  /** Graceful stop (SIGTERM); its exit. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGTERM");
    return this.#exit;
  }
}
