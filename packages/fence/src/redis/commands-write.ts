/**
 * A fenced Redis write given as data, `redisCommands(["SET", key, value], ...)`, instead of a function
 * that queues commands. It is still a write function (fence(), request.fenced() and any wrapper take
 * it as one), but the Redis store recognises it and knows that calling it does nothing but queue these
 * commands: there is no code of the caller's to keep from running for a stale token, so the store
 * skips the GET pre-check and sends the one script straight away, one round trip instead of two.
 *
 * Recognised by a property under a symbol this module does not export, holding the checked commands:
 * only a write this module built carries it. (Not a WeakMap of the writes: one entry per fenced call
 * cost the garbage collector a few microseconds each, a tenth of a local round trip.) A copy of the
 * package loaded twice does not recognise the other copy's writes; they then take the general path,
 * which is slower and just as safe.
 */

import { FenceError } from "../errors.js";
import type { FenceWrite } from "../store.js";
import type { RedisFenceTx } from "./batch.js";
import {
  type CheckedCommand,
  checkCommand,
  type RedisArg,
  type RedisWriteCommand,
  WRITE_COMMANDS,
} from "./commands.js";

/** One command of a write given as data: the command, its key, then its arguments. */
export type RedisCommand = readonly [command: RedisWriteCommand, key: string, ...args: RedisArg[]];

/** What redisCommands() returns: a write whose result is every command's reply, in order. */
export type RedisCommandsWrite = FenceWrite<RedisFenceTx, Promise<unknown[]>>;

const COMMANDS = Symbol("the checked commands of a redisCommands() write");

/**
 * The write that runs `commands` in the fence script, in order, and resolves with their replies.
 * Each command is checked now, as `tx.call()` would check it (an allowed write command, its argument
 * count, the kinds of its arguments): FENCE_BAD_WRITE is thrown here, before anything is sent. Keys
 * under the store's fence prefix are refused by the store, which alone knows the prefix.
 */
export function redisCommands(...commands: RedisCommand[]): RedisCommandsWrite {
  const checked = commands.map((command) => {
    if (!Array.isArray(command)) {
      throw new FenceError(
        "FENCE_BAD_WRITE",
        'redisCommands() takes commands as arrays: ["SET", key, value], ["RPUSH", key, item], …',
      );
    }
    const [name, key, ...args] = command as RedisCommand;
    return checkCommand(WRITE_COMMANDS, name, key, args);
  });
  // Called as a plain write (by a store that does not know it, or through a wrapper), it queues the
  // same commands on tx and resolves with the same replies.
  const write: RedisCommandsWrite = (tx) =>
    Promise.all(checked.map(({ name, key, args }) => tx.call(name as RedisWriteCommand, key, ...args)));
  (write as { [COMMANDS]?: readonly CheckedCommand[] })[COMMANDS] = checked;
  return write;
}

/** The checked commands of a write made by redisCommands(), or undefined for any other write. */
export function commandsOf(write: unknown): readonly CheckedCommand[] | undefined {
  return typeof write === "function"
    ? (write as { [COMMANDS]?: readonly CheckedCommand[] })[COMMANDS]
    : undefined;
}
