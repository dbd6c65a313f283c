import { createInterface } from "node:readline";
import { type Lock, LockClient, LockError } from "@lock/client";

/**
 * The conformance adapter for @lock/client: reads adapter-protocol commands (one JSON object per
 * line) on stdin, runs each on one LockClient as it arrives, without waiting for earlier ones, and
 * writes each reply as it settles. Run it from dist: `node dist/adapters/lock-client.js`.
 */

type Command = { readonly id: number; readonly op: string } & Record<string, unknown>;
type Reply = Record<string, unknown>;

// @lock/client's error codes in the adapter protocol's terms (README.md, "The adapter protocol").
const FAILURE_CODES: Record<string, string> = {
  LOCK_WAIT_TIMEOUT: "timeout",
  LOCK_LOST: "lost",
  LOCK_NO_SERVER: "no_server",
  LOCK_SERVER_REFUSED: "server_error",
  LOCK_PROTOCOL: "protocol",
  LOCK_CLIENT_CLOSED: "closed",
  LOCK_INVALID_ARGUMENT: "invalid_argument",
};

let client: LockClient | undefined;
const locks = new Map<string, Lock>();
let nextLock = 1;

function holding(lock: Lock): Reply {
  const handle = String(nextLock++);
  locks.set(handle, lock);
  return { ok: true, lock: handle, token: lock.token.toString() };
}

function lockOf(command: Command): Lock {
  const lock = locks.get(String(command.lock));
  if (lock === undefined) throw new Error(`unknown lock handle ${String(command.lock)}`);
  return lock;
}

function connected(): LockClient {
  if (client === undefined) throw new Error("config must come first");
  return client;
}

async function run(command: Command): Promise<Reply> {
  switch (command.op) {
    case "config":
      client = new LockClient({ servers: command.servers as string[] });
      logEvents(client);
      return { ok: true };
    case "acquire": {
      const { key, leaseMs, waitMs } = command as unknown as { key: string; leaseMs: number; waitMs: number };
      return holding(await connected().acquire(key, { leaseMs, waitMs }));
    }
    case "tryAcquire": {
      const { key, leaseMs } = command as unknown as { key: string; leaseMs: number };
      const lock = await connected().tryAcquire(key, { leaseMs });
      return lock === null ? { ok: false, code: "busy" } : holding(lock);
    }
    case "extend":
      await lockOf(command).extend(command.leaseMs as number);
      return { ok: true };
    case "release":
      return { ok: true, released: await lockOf(command).release() };
    case "close":
      await client?.close();
      return { ok: true };
    default:
      return { ok: false, code: "unsupported", message: `unknown op ${command.op}` };
  }
}

/** What the client did, on stderr: the suite shows it when a case fails. */
function logEvents(events: LockClient): void {
  const started = performance.now();
  const log = (text: string) =>
    process.stderr.write(`${Math.round(performance.now() - started)} ms ${text}\n`);
  events.on("connect", ({ address }) => log(`connect ${address}`));
  events.on("disconnect", ({ address, error }) => log(`disconnect ${address}: ${error?.message}`));
  events.on("connectFailed", ({ address, error }) => log(`connect failed ${address}: ${error.message}`));
  events.on("redirect", ({ from, to, op, key }) => log(`redirect ${op} ${key} from ${from} to ${to}`));
  events.on("retry", ({ key, attempt, error }) => log(`retry ${key} attempt ${attempt}: ${error?.message}`));
}

function failure(error: unknown): Reply {
  if (error instanceof LockError) {
    const reply: Reply = { ok: false, code: FAILURE_CODES[error.code] ?? "internal", message: error.message };
    if ("serverCode" in error) reply.serverCode = error.serverCode;
    return reply;
  }
  return { ok: false, code: "internal", message: error instanceof Error ? error.message : String(error) };
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const command = JSON.parse(line) as Command;
  run(command).then(
    (reply) => process.stdout.write(`${JSON.stringify({ id: command.id, ...reply })}\n`),
    (error: unknown) => process.stdout.write(`${JSON.stringify({ id: command.id, ...failure(error) })}\n`),
  );
});
