import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { parseToken } from "@lock/protocol";

/**
 * The failure codes an adapter reports (README.md, "The adapter protocol"), in the client's own
 * terms translated to these. A case names the code it expects; anything else fails it.
 */
export type FailureCode =
  | "timeout"
  | "busy"
  | "lost"
  | "no_server"
  | "server_error"
  | "protocol"
  | "closed"
  | "invalid_argument"
  | "unsupported"
  | "internal";

export interface Failure {
  readonly ok: false;
  readonly code: FailureCode;
  /** For `server_error`: lockd's error code, e.g. `KEY_TOO_LONG`. */
  readonly serverCode?: string;
  readonly message?: string;
}

export interface Granted {
  readonly ok: true;
  /** The adapter's handle for the lock, passed back to `extend` and `release`. */
  readonly lock: string;
  readonly token: bigint;
}

export type AcquireOutcome = Granted | Failure;
export type ReleaseOutcome = { readonly ok: true; readonly released: boolean } | Failure;
export type ExtendOutcome = { readonly ok: true } | Failure;

type Reply = { readonly ok: boolean } & Record<string, unknown>;

/** What went wrong with the adapter itself (not with the client's answers): always a failure. */
export class AdapterError extends Error {
  override readonly name = "AdapterError";
}

/**
 * One instance of the client under test: a subprocess that speaks the adapter protocol, one JSON
 * object per line, on its stdin (commands) and stdout (replies, matched by `id`, in any order).
 * Anything it writes to stderr is kept for the failure message.
 */
export class AdapterProcess {
  readonly stderr: string[] = [];
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  readonly #exited: Promise<void>;
  #nextId = 1;
  #exit: string | undefined;

  private constructor(
    command: readonly string[],
    readonly label: string,
  ) {
    const [file, ...args] = command;
    if (file === undefined) throw new AdapterError("the adapter command is empty");
    this.#child = spawn(file, args, { stdio: ["pipe", "pipe", "pipe"] });
    this.#child.stdin!.on("error", () => {});
    this.#child.stderr!.setEncoding("utf8").on("data", (chunk: string) => this.stderr.push(chunk));
    createInterface({ input: this.#child.stdout! }).on("line", (line) => this.#onLine(line));
    this.#exited = new Promise((resolve) => {
      const ended = (reason: string) => {
        this.#exit ??= reason;
        for (const { reject } of this.#pending.values())
          reject(new AdapterError(`adapter ${this.label} ${reason} with a command outstanding`));
        this.#pending.clear();
        resolve();
      };
      this.#child.once("error", (error) => ended(`could not start (${error.message})`));
      this.#child.once("exit", (code, signal) => ended(`exited (code ${code}, signal ${signal})`));
    });
  }

  /** Starts the adapter and configures it with the lockd addresses its client should use. */
  static async start(command: readonly string[], label: string, servers: readonly string[]) {
    const adapter = new AdapterProcess(command, label);
    const reply = await adapter.#call({ op: "config", servers });
    if (!reply.ok) throw new AdapterError(`adapter ${label} refused its config: ${JSON.stringify(reply)}`);
    return adapter;
  }

  acquire(key: string, leaseMs: number, waitMs: number): Promise<AcquireOutcome> {
    return handled(this.#call({ op: "acquire", key, leaseMs, waitMs }).then(granted));
  }

  tryAcquire(key: string, leaseMs: number): Promise<AcquireOutcome> {
    return handled(this.#call({ op: "tryAcquire", key, leaseMs }).then(granted));
  }

  extend(lock: string, leaseMs: number): Promise<ExtendOutcome> {
    const extended = (reply: Reply): ExtendOutcome => (reply.ok ? { ok: true } : failure(reply));
    return handled(this.#call({ op: "extend", lock, leaseMs }).then(extended));
  }

  release(lock: string): Promise<ReleaseOutcome> {
    return handled(this.#call({ op: "release", lock }).then(released));
  }

  /** Asks the client to close (it releases what it holds), then waits for the process to exit. */
  async close(): Promise<void> {
    if (this.#exit === undefined) {
      const reply = await this.#call({ op: "close" });
      if (!reply.ok) throw new AdapterError(`close failed: ${line(reply)}`);
      this.#child.stdin!.end();
    }
    await this.#exited;
  }

  /** Ends the process at once (after a failed case, or one that left it running). */
  async kill(): Promise<void> {
    if (this.#exit === undefined) this.#child.kill("SIGKILL");
    await this.#exited;
  }

  #call(command: Record<string, unknown>): Promise<Reply> {
    if (this.#exit !== undefined)
      return Promise.reject(new AdapterError(`adapter ${this.label} ${this.#exit}`));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#child.stdin!.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  }

  #onLine(text: string): void {
    let reply: unknown;
    try {
      reply = JSON.parse(text);
    } catch {
      this.#broken(`wrote a line that is not JSON: ${text}`);
      return;
    }
    const id = (reply as { id?: unknown })?.id;
    const waiter = typeof id === "number" ? this.#pending.get(id) : undefined;
    if (waiter === undefined || typeof (reply as Reply).ok !== "boolean") {
      this.#broken(`wrote a reply that answers no command: ${text}`);
      return;
    }
    this.#pending.delete(id as number);
    waiter.resolve(reply as Reply);
  }

  /** The adapter broke the adapter protocol: every command outstanding fails with the reason. */
  #broken(reason: string): void {
    for (const { reject } of this.#pending.values())
      reject(new AdapterError(`adapter ${this.label} ${reason}`));
    this.#pending.clear();
  }
}

/**
 * Marks `promise` handled: a case that failed early may leave a call it never awaited, which fails
 * when its adapter is killed; that must not become an unhandled rejection. Awaiting it still throws.
 */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

function released(reply: Reply): ReleaseOutcome {
  if (!reply.ok) return failure(reply);
  if (typeof reply.released !== "boolean")
    throw new AdapterError(`release reply without released: ${line(reply)}`);
  return { ok: true, released: reply.released };
}

function granted(reply: Reply): AcquireOutcome {
  if (!reply.ok) return failure(reply);
  // A token as the wire spells it: a canonical decimal u64 (@lock/protocol's one parser).
  const token = typeof reply.token === "string" ? parseToken(reply.token) : undefined;
  if (typeof reply.lock !== "string" || token === undefined) {
    throw new AdapterError(`a grant needs a lock handle and a decimal u64 token: ${line(reply)}`);
  }
  return { ok: true, lock: reply.lock, token };
}

function failure(reply: Reply): Failure {
  if (typeof reply.code !== "string") throw new AdapterError(`a failure needs a code: ${line(reply)}`);
  return reply as unknown as Failure;
}

function line(reply: Reply): string {
  return JSON.stringify(reply);
}
