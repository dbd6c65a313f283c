import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { LOCK_CLI_MAIN } from "@lock/testkit";
import { expect } from "vitest";

/**
 * The built `lock` CLI as a real child process, for tests. Its stdout is read line by line (the
 * command `lock run` starts shares it, so the command's output is here too); its stdin is a pipe the
 * test can write to (the command shares that too: `send("go")` reaches a command that reads stdin).
 */
export class LockCli {
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly #child: ChildProcess;
  readonly #waiters: Array<{ match(line: string): boolean; resolve(line: string): void }> = [];

  private constructor(args: readonly string[], env: Readonly<Record<string, string>>) {
    this.#child = spawn(process.execPath, [LOCK_CLI_MAIN, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) =>
      this.#child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    this.#child.stderr!.setEncoding("utf8").on("data", (chunk: string) => this.stderr.push(chunk));
    createInterface({ input: this.#child.stdout! }).on("line", (line) => {
      this.stdout.push(line);
      for (const waiter of [...this.#waiters]) {
        if (!waiter.match(line)) continue;
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    });
  }

  /** Starts `lock ARGS...` with only PATH and `env` in its environment. */
  static start(args: readonly string[], env: Readonly<Record<string, string>> = {}): LockCli {
    return new LockCli(args, env);
  }

  /** Runs `lock ARGS...` to its end: its exit status, stdout lines and stderr text. */
  static async run(
    args: readonly string[],
    env: Readonly<Record<string, string>> = {},
  ): Promise<{ code: number | null; stdout: string[]; stderr: string }> {
    const cli = LockCli.start(args, env);
    cli.#child.stdin!.end();
    const { code } = await cli.exited;
    await cli.#drained();
    return { code, stdout: cli.stdout, stderr: cli.stderr.join("") };
  }

  get pid(): number {
    return this.#child.pid!;
  }

  /** The first stdout line (already printed or still to come) that `match` accepts. */
  line(match: (line: string) => boolean): Promise<string> {
    const earlier = this.stdout.find(match);
    if (earlier !== undefined) return Promise.resolve(earlier);
    return new Promise((resolve, reject) => {
      this.#waiters.push({ match, resolve });
      void this.exited.then(() =>
        setImmediate(() =>
          reject(new Error(`lock exited without printing the line; stderr: ${this.stderr.join("")}`)),
        ),
      );
    });
  }

  /** Writes `text` and a newline to lock's stdin, which the command reads. */
  send(text: string): void {
    this.#child.stdin!.write(`${text}\n`);
  }

  kill(signal: NodeJS.Signals): void {
    this.#child.kill(signal);
  }

  /** The exit status, once stdout has been read to its end. */
  async status(): Promise<number | null> {
    const { code } = await this.exited;
    await this.#drained();
    return code;
  }

  dispose(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGKILL");
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #drained(): Promise<void> {
    const stdout = this.#child.stdout!;
    return stdout.readableEnded
      ? Promise.resolve()
      : new Promise((resolve) => stdout.once("end", () => resolve()));
  }
}

/**
 * A job for `lock run` to run, as `node -e JOB LOG NAME [EXIT]`: it takes a mutex directory beside
 * LOG with mkdir (which fails if another job holds it: the lock let two run at once), appends
 * `start NAME TOKEN` to LOG (O_APPEND), prints `started NAME TOKEN`, waits for a line on stdin,
 * appends `end NAME`, gives up the mutex and exits with EXIT (default 0).
 */
export const JOB = `
const fs = require("node:fs");
const [log, name, exit] = process.argv.slice(1);
try { fs.mkdirSync(log + ".mutex"); } catch { fs.appendFileSync(log, "OVERLAP " + name + "\\n"); process.exit(99); }
fs.appendFileSync(log, "start " + name + " " + process.env.LOCK_TOKEN + "\\n");
console.log("started " + name + " " + process.env.LOCK_TOKEN);
process.stdin.once("data", () => {
  fs.appendFileSync(log, "end " + name + "\\n");
  fs.rmdirSync(log + ".mutex");
  process.exit(Number(exit ?? 0));
});
`;

/** Resolves once `check` returns true, asking again every 20 ms (for server state no event announces). */
export async function eventually(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Lets two `lock run`s of JOB on one key finish in turn: `first` (running) is told to end, then
 * `second` must start, and is told to end. Both must exit 0, and the LOG they wrote must show them
 * one after the other, never overlapping, with increasing tokens (each grant has its own).
 */
export async function finishInTurn(first: LockCli, second: LockCli, log: string): Promise<void> {
  first.send("go");
  expect(await first.status()).toBe(0);
  await second.line((line) => line.startsWith("started second"));
  second.send("go");
  expect(await second.status()).toBe(0);
  const lines = readFileSync(log, "utf8").trim().split("\n");
  expect(lines.map((line) => line.split(" ").slice(0, 2).join(" "))).toEqual([
    "start first",
    "end first",
    "start second",
    "end second",
  ]);
  const [firstToken, secondToken] = [lines[0]!, lines[2]!].map((line) => BigInt(line.split(" ")[2]!));
  expect(secondToken!).toBeGreaterThan(firstToken!);
}
