import { types } from "node:util";
import { assertOptions, hasMethods } from "../arguments.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { checkFenceInput } from "../fence-input.js";
import { assertResource } from "../resource.js";
import type { FenceStore, FenceWrite } from "../store.js";
import { CommandBatch, type RedisFenceTx } from "./batch.js";
import type { RedisArg } from "./commands.js";
import { FENCE_LUA } from "./fence.lua.js";
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

/**
 * Fences writes in Redis with one Lua script: the token check, the batched commands and the token
 * advance run as one atomic step, so no other client's command can come between them.
 *
 * Before that, one GET of the fence key: a token that is already stale is refused there, and the write
 * is never called. The GET is only a pre-check; the script decides. A newer token recorded between the
 * GET and the script (another holder's fence() in that gap) means the write was called and queued its
 * commands, and the script then refuses the batch: none of it runs, fence() rejects with
 * StaleTokenError. Redis cannot run the JavaScript write inside its atomic step, so a write should only
 * queue commands; any other side effect of it can still happen for a token that loses that race.
 *
 * The write queues commands on the RedisFenceTx (see RedisFenceTx.call and commands.ts for the allowed
 * set) synchronously; they run when the write returns, so async writes are refused. The one caveat Redis
 * leaves: a command that fails while the script runs (INCR on a non-numeric string, out of memory)
 * aborts the script but does not undo the commands before it. The token is written last and so is not
 * advanced; fence() rejects with FENCE_WRITE_FAILED. Keep batches to commands that cannot fail that way.
 *
 * With Redis Cluster, the fence key and all written keys must share a hash slot: use hash tags, e.g.
 * resource "{order:42}" and keys "{order:42}:status".
 */
export class RedisStore implements FenceStore<RedisFenceTx> {
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
    const checkedToken = checkFenceInput(resource, token, write);
    if (types.isAsyncFunction(write)) {
      throw new FenceError(
        "FENCE_BAD_WRITE",
        "a fenced Redis write must queue its commands synchronously; pass a plain (non-async) function",
      );
    }
    const current = await this.#currentToken(resource);
    if (current !== undefined && checkedToken < current) {
      throw new StaleTokenError(resource, checkedToken, current);
    }
    const batch = new CommandBatch(this.keyPrefix);
    let result: T;
    try {
      result = write(batch);
      batch.seal();
      batch.resolve(await this.#runScript(resource, checkedToken, batch));
    } catch (error) {
      // Whether the write threw or the script refused: every reply promise settles with the reason.
      batch.seal();
      batch.reject(error);
      throw error;
    }
    return await result;
  }

  async current(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return this.#currentToken(resource);
  }

  async #currentToken(resource: string): Promise<bigint | undefined> {
    const stored = await this.#client.get(this.keyPrefix + resource);
    return stored === null ? undefined : BigInt(stored);
  }

  async #runScript(resource: string, token: bigint, batch: CommandBatch): Promise<unknown[]> {
    const keys = [this.keyPrefix + resource, ...batch.commands.map((command) => command.key)];
    const args: RedisArg[] = [token.toString(), batch.commands.length];
    for (const command of batch.commands)
      args.push(command.name, command.keyType, command.args.length, ...command.args);

    let reply: unknown;
    try {
      reply = await FENCE_SCRIPT.run(this.#client, keys, args);
    } catch (error) {
      // A reply error means the script started and a command failed in it. Anything else (a dropped
      // connection, a timeout) leaves the outcome unknown and is passed on unchanged.
      if (!(error instanceof Error) || error.name !== "ReplyError") throw error;
      throw new FenceError(
        "FENCE_WRITE_FAILED",
        `a command of the fenced write to ${JSON.stringify(resource)} failed inside the script; commands ` +
          `before it stay applied (Redis does not roll scripts back), the token was not advanced: ${error.message}`,
        { cause: error },
      );
    }
    const [outcome, ...rest] = reply as [number, ...unknown[]];
    if (outcome === 1) return rest;
    if (outcome === 0) throw new StaleTokenError(resource, token, BigInt(String(rest[0])));
    const command = batch.commands[Number(rest[0]) - 1];
    throw new FenceError(
      "FENCE_BAD_WRITE",
      `${command?.name} ${command?.key}: the key holds a ${String(rest[1])}; nothing was written`,
    );
  }
}

export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
