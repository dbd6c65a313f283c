import { FenceError } from "../errors.js";
import {
  assertNotFenceKey,
  type CheckedCommand,
  type CommandSet,
  checkCommand,
  type RedisArg,
  type RedisReadCommand,
  type RedisWriteCommand,
} from "./commands.js";

/** What a write receives from the Redis store: a queue of commands for the fence script. */
export interface RedisFenceTx {
  /**
   * Queues `command key ...args` to run inside the fence script, after the token check and before the
   * token advance, atomically with both. Nothing runs until the write returns. The promise settles once
   * the script ran: with this command's reply, or rejected with the error fence() rejects with. Return
   * it (or Promise.all of several) from the write to get replies out of fence(); never await it inside
   * the write, which would wait for a script that cannot start until the write returns.
   */
  call(command: RedisWriteCommand, key: string, ...args: RedisArg[]): Promise<unknown>;
}

/**
 * What a read receives from the Redis store's fenceRead(): a queue of read commands for the read
 * script, which runs them after the token check, atomically with it (and with the record). The rules of
 * RedisFenceTx.call apply: queue synchronously, return the promises, never await them inside the read.
 * Replies are what EVAL returns: HGETALL a flat [field, value, ...] array, a missing key null.
 */
export interface RedisFenceReadTx {
  call(command: RedisReadCommand, key: string, ...args: RedisArg[]): Promise<unknown>;
}

interface Pending {
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

/**
 * Collects a write's (or a read's) commands; sealed once the write has returned, then settled with the
 * outcome.
 */
export class CommandBatch implements RedisFenceTx, RedisFenceReadTx {
  readonly commands: CheckedCommand[] = [];
  readonly #pending: Pending[] = [];
  readonly #reservedPrefix: string;
  readonly #set: CommandSet;
  #sealed = false;

  /** Keys under `reservedPrefix` are fence keys; a batch must not touch them. */
  constructor(reservedPrefix: string, set: CommandSet) {
    this.#reservedPrefix = reservedPrefix;
    this.#set = set;
  }

  call(command: RedisWriteCommand | RedisReadCommand, key: string, ...args: RedisArg[]): Promise<unknown> {
    const { code, use } = this.#set;
    if (this.#sealed) {
      throw new FenceError(
        code,
        `a fenced Redis ${use} queued a command after it returned; the batch had already run without it. ` +
          `Queue every command synchronously, before the ${use} returns`,
      );
    }
    const checked = checkCommand(this.#set, command, key, args);
    assertNotFenceKey(this.#set, checked, this.#reservedPrefix);
    const reply = new Promise<unknown>((resolve, reject) => this.#pending.push({ resolve, reject }));
    // Callers often ignore replies; a refused batch must not turn into an unhandled rejection.
    reply.catch(() => {});
    this.commands.push(checked);
    return reply;
  }

  seal(): void {
    this.#sealed = true;
  }

  resolve(replies: readonly unknown[]): void {
    for (const [index, pending] of this.#pending.entries()) pending.resolve(replies[index]);
  }

  reject(error: unknown): void {
    for (const pending of this.#pending) pending.reject(error);
  }
}
