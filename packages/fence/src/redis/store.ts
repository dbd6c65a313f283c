import { types } from "node:util";
import { assertOptions, hasMethods } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { checkFenceInput } from "../fence-input.js";
import { assertResource } from "../resource.js";
import { decideRead, decideWrite, type FenceDecision, type FenceMarks } from "../rule.js";
import type { FenceReadOptions, FenceWrite, ReadFenceStore } from "../store.js";
import { CommandBatch, type RedisFenceReadTx, type RedisFenceTx } from "./batch.js";
import {
  assertNotFenceKey,
  type CheckedCommand,
  type CommandSet,
  READ_COMMANDS,
  type RedisArg,
  WRITE_COMMANDS,
} from "./commands.js";
import { commandsOf } from "./commands-write.js";
import { FENCE_LUA, FENCE_READ_LUA } from "./fence.lua.js";
import { LuaScript, type RedisScriptClient } from "./script.js";

export const DEFAULT_KEY_PREFIX = "fence:";

/** An ioredis Redis or Cluster client (only these methods are used). */
export interface RedisFenceClient extends RedisScriptClient {
  get(key: string): Promise<string | null>;
}

export interface RedisStoreOptions {
  client: RedisFenceClient;
  /** The fence key of resource r is `${keyPrefix}${r}`; writes may not touch keys under it. Default "fence:". */
  keyPrefix?: string;
}

const FENCE_SCRIPT = new LuaScript(FENCE_LUA);
const FENCE_READ_SCRIPT = new LuaScript(FENCE_READ_LUA);

/**
 * Fences writes in Redis with one Lua script: the token check, the batched commands and the token
 * advance run as one atomic step, so no other client's command can come between them. What comes
 * before the script depends on the write:
 *
 * - A write made by redisCommands() (commands as data): nothing. The script is the only command, one
 *   round trip. No code of the caller's runs, so a stale token has nothing to run but the script,
 *   which refuses it.
 * - Any other write (a function that queues commands on the RedisFenceTx): first one GET of the fence
 *   key, so that a token already stale is refused there and the function is never called. The GET is
 *   only a pre-check; the script decides. A newer token recorded between the GET and the script
 *   (another holder's fence() in that gap) means the function was called and queued its commands, and
 *   the script then refuses the batch: none of it runs, fence() rejects with StaleTokenError. Redis
 *   cannot run JavaScript inside its atomic step, so the function should only queue commands; any
 *   other side effect of it can still happen for a token that loses that race. Two round trips.
 *
 * The function queues commands on the RedisFenceTx (see RedisFenceTx.call and commands.ts for the
 * allowed set) synchronously; they run when it returns, so async writes are refused. The one caveat
 * Redis leaves: a command that fails while the script runs (INCR on a non-numeric string, out of
 * memory) aborts the script but does not undo the commands before it. The token is written last and
 * so is not advanced; fence() rejects with FENCE_WRITE_FAILED. Keep batches to commands that cannot
 * fail that way.
 *
 * fenceRead() works like the general path with read commands (RedisFenceReadTx): the GET pre-check,
 * then one script that checks the write mark, runs the reads and, with `record`, raises the read mark,
 * so no write can come between the check and the reads. Both marks live in the fence key's value
 * (fence.lua.ts), so a read needs no other key.
 *
 * With Redis Cluster, the fence key and all written (or read) keys must share a hash slot: use hash
 * tags, e.g. resource "{order:42}" and keys "{order:42}:status". Redis refuses a script whose keys
 * span slots before running it; fence() then rejects with FENCE_CROSS_SLOT.
 */
export class RedisStore implements ReadFenceStore<RedisFenceTx, RedisFenceReadTx> {
  readonly keyPrefix: string;
  readonly #client: RedisFenceClient;

  constructor(options: RedisStoreOptions) {
    assertOptions(options, "redisStore()", "options: { client }");
    if (!hasMethods(options.client, "get", "evalsha", "eval")) {
      throw new FenceError(
        "FENCE_BAD_OPTIONS",
        "redisStore() needs `client`: an ioredis Redis or Cluster client",
      );
    }
    this.#client = options.client;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    if (typeof this.keyPrefix !== "string" || this.keyPrefix.length === 0) {
      // Without a prefix fence keys would be indistinguishable from data keys.
      throw new FenceError("FENCE_BAD_OPTIONS", "redisStore() needs a non-empty keyPrefix");
    }
  }

  async fence<T>(resource: string, token: bigint, write: FenceWrite<RedisFenceTx, T>): Promise<Awaited<T>> {
    // Checked here, not only in fence(): the script stores ARGV[1] as the token, and an unchecked
    // "abc" once made every later fence() on the resource throw a SyntaxError.
    const checked = checkFenceInput(resource, token, write);
    const commands = commandsOf(write);
    if (commands) return this.#runCommands(resource, checked, commands) as Promise<Awaited<T>>;
    return this.#run(resource, checked, write, WRITE_COMMANDS, (marks) => decideWrite(marks, checked), "0");
  }

  async fenceRead<T>(
    resource: string,
    token: bigint,
    read: FenceWrite<RedisFenceReadTx, T>,
    options: FenceReadOptions = {},
  ): Promise<Awaited<T>> {
    const checked = checkFenceInput(resource, token, read);
    const record = options?.record === true;
    return this.#run(
      resource,
      checked,
      read,
      READ_COMMANDS,
      (marks) => decideRead(marks, checked, record),
      record ? "1" : "0",
    );
  }

  async current(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return (await this.#marks(resource)).write;
  }

  async currentRead(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return (await this.#marks(resource)).read;
  }

  async #marks(resource: string): Promise<FenceMarks> {
    return parseMarks(await this.#client.get(this.keyPrefix + resource));
  }

  /**
   * One fenced call: the GET pre-check (`decide` on the marks: a token already stale never gets its
   * body called), the body queueing its commands, then the script, which decides again.
   */
  async #run<Tx, T>(
    resource: string,
    token: bigint,
    body: FenceWrite<Tx, T>,
    set: CommandSet,
    decide: (marks: FenceMarks) => FenceDecision,
    flag: "0" | "1",
  ): Promise<Awaited<T>> {
    if (types.isAsyncFunction(body)) {
      throw new FenceError(
        set.code,
        `a fenced Redis ${set.use} must queue its commands synchronously; pass a plain (non-async) function`,
      );
    }
    const decision = decide(await this.#marks(resource));
    if (!decision.accepted) {
      const { current, code } = decision.refusal;
      throw new StaleTokenError(resource, token, current, code);
    }
    const batch = new CommandBatch(this.keyPrefix, set);
    let result: T | undefined;
    try {
      result = body(batch as Tx);
      batch.seal();
      batch.resolve(await this.#runScript(resource, token, batch.commands, set, flag));
    } catch (error) {
      // Whether the body threw or the script refused: every reply promise settles with the reason.
      batch.seal();
      batch.reject(error);
      // So does what the body returned when that is a promise of them (Promise.all of the replies):
      // fence() rejects with the reason, and that promise must not become an unhandled rejection.
      if (isThenable(result)) result.then(undefined, () => {});
      throw error;
    }
    return await (result as T);
  }

  /**
   * The fast path, for a write made by redisCommands(): its commands are data, so no code of the
   * caller's runs whatever the token, and the script alone decides. One round trip.
   */
  #runCommands(resource: string, token: bigint, commands: readonly CheckedCommand[]): Promise<unknown[]> {
    for (const command of commands) assertNotFenceKey(WRITE_COMMANDS, command, this.keyPrefix);
    return this.#runScript(resource, token, commands, WRITE_COMMANDS, "0");
  }

  async #runScript(
    resource: string,
    token: bigint,
    commands: readonly CheckedCommand[],
    set: CommandSet,
    flag: "0" | "1",
  ): Promise<unknown[]> {
    const keys = [this.keyPrefix + resource];
    const args: RedisArg[] = [token.toString(), flag, commands.length];
    for (const command of commands) {
      keys.push(command.key);
      args.push(command.name, command.keyType, command.args.length, ...command.args);
    }
    const write = set === WRITE_COMMANDS;

    let reply: unknown;
    try {
      reply = await (write ? FENCE_SCRIPT : FENCE_READ_SCRIPT).run(this.#client, keys, args);
    } catch (error) {
      // A reply error means the script started and a command failed in it, or that Redis refused to
      // start it. Anything else (a dropped connection, a timeout) leaves the outcome unknown and is
      // passed on unchanged.
      if (!(error instanceof Error) || error.name !== "ReplyError") throw error;
      if (error.message.startsWith("CROSSSLOT")) throw crossSlot(resource, keys, error);
      throw write
        ? new FenceError(
            "FENCE_WRITE_FAILED",
            `a command of the fenced write to ${JSON.stringify(resource)} failed inside the script; commands ` +
              `before it stay applied (Redis does not roll scripts back), the token was not advanced: ${error.message}`,
            { cause: error },
          )
        : new FenceError(
            "FENCE_BAD_READ",
            `a command of the fenced read of ${JSON.stringify(resource)} failed inside the script; nothing was recorded: ${error.message}`,
            { cause: error },
          );
    }
    // {outcome, ...}: see fence.lua.ts.
    const replies = reply as unknown[];
    const outcome = replies[0];
    if (outcome === 1) return replies.slice(1);
    if (outcome === 0) {
      throw new StaleTokenError(
        resource,
        token,
        BigInt(String(replies[1])),
        write ? "FENCE_STALE_TOKEN" : "FENCE_STALE_READ",
      );
    }
    if (outcome === 3)
      throw new StaleTokenError(resource, token, BigInt(String(replies[1])), "FENCE_NEWER_READ");
    const command = commands[Number(replies[1]) - 1];
    throw new FenceError(
      "FENCE_BAD_WRITE",
      `${command?.name} ${command?.key}: the key holds a ${String(replies[2])}; nothing was written`,
    );
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}

/**
 * Redis Cluster refused the script before running it: its keys hash to more than one slot, and a
 * script may only touch the keys of one. Nothing ran.
 */
function crossSlot(resource: string, keys: readonly string[], cause: Error): FenceError {
  return new FenceError(
    "FENCE_CROSS_SLOT",
    `Redis Cluster refused the fenced call on ${JSON.stringify(resource)}: its fence key and the keys it ` +
      `touches (${keys.map((key) => JSON.stringify(key)).join(", ")}) must share one hash slot. Give them ` +
      'one hash tag, e.g. resource "{order:42}" and keys "{order:42}:status"; nothing ran',
    { cause },
  );
}

/** The marks a fence key holds (fence.lua.ts): "34", "34,40" or ",40"; none for a missing key. */
export function parseMarks(value: string | null): FenceMarks {
  if (value === null) return {};
  const comma = value.indexOf(",");
  if (comma < 0) return { write: BigInt(value) };
  const written = value.slice(0, comma);
  return { ...(written === "" ? {} : { write: BigInt(written) }), read: BigInt(value.slice(comma + 1)) };
}

export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
