/**
 * The write commands a fenced Redis batch may contain. A fixed list, because the script must know two
 * things Redis itself cannot tell it up front: which argument is the key (always the first, so the key
 * is declared in KEYS and the batch works with key prefixes and, within one hash slot, Cluster), and
 * which key type the command needs (so a WRONGTYPE can be refused before anything is written; Redis
 * never rolls a script back). Reads and admin commands have no place in a fenced write.
 */
import { FenceError } from "../errors.js";

/** The key type a command requires; "any" works on every type (or replaces the value). */
type KeyType = "any" | "string" | "hash" | "list" | "set" | "zset" | "stream";

interface CommandRule {
  keyType: KeyType;
  /** Arguments after the key. */
  minArgs: number;
  maxArgs?: number;
  /** field/value or score/member pairs: the count after the key must be even. */
  pairs?: boolean;
}

const unbounded = (keyType: KeyType, minArgs: number): CommandRule => ({ keyType, minArgs });
const exactly = (keyType: KeyType, args: number): CommandRule => ({ keyType, minArgs: args, maxArgs: args });

const RULES = {
  // Strings. SET and SETNX replace a value of any type.
  SET: unbounded("any", 1),
  SETNX: exactly("any", 1),
  SETRANGE: exactly("string", 2),
  APPEND: exactly("string", 1),
  INCR: exactly("string", 0),
  INCRBY: exactly("string", 1),
  INCRBYFLOAT: exactly("string", 1),
  DECR: exactly("string", 0),
  DECRBY: exactly("string", 1),
  // Hashes.
  HSET: { keyType: "hash", minArgs: 2, pairs: true },
  HSETNX: exactly("hash", 2),
  HDEL: unbounded("hash", 1),
  HINCRBY: exactly("hash", 2),
  HINCRBYFLOAT: exactly("hash", 2),
  // Lists.
  LPUSH: unbounded("list", 1),
  RPUSH: unbounded("list", 1),
  LPOP: { keyType: "list", minArgs: 0, maxArgs: 1 },
  RPOP: { keyType: "list", minArgs: 0, maxArgs: 1 },
  LREM: exactly("list", 2),
  LTRIM: exactly("list", 2),
  // Sets and sorted sets.
  SADD: unbounded("set", 1),
  SREM: unbounded("set", 1),
  ZADD: unbounded("zset", 2),
  ZREM: unbounded("zset", 1),
  ZINCRBY: exactly("zset", 2),
  // Streams.
  XADD: unbounded("stream", 3),
  // Any key.
  DEL: exactly("any", 0),
  UNLINK: exactly("any", 0),
  EXPIRE: { keyType: "any", minArgs: 1, maxArgs: 2 },
  PEXPIRE: { keyType: "any", minArgs: 1, maxArgs: 2 },
  EXPIREAT: { keyType: "any", minArgs: 1, maxArgs: 2 },
  PEXPIREAT: { keyType: "any", minArgs: 1, maxArgs: 2 },
  PERSIST: exactly("any", 0),
} as const satisfies Record<string, CommandRule>;

/** A command a fenced batch may run; case-insensitive at runtime. */
export type RedisWriteCommand = keyof typeof RULES | Lowercase<keyof typeof RULES>;

export const REDIS_WRITE_COMMANDS = Object.keys(RULES) as readonly (keyof typeof RULES)[];

export type RedisArg = string | number | Buffer;

export interface CheckedCommand {
  name: string;
  keyType: KeyType;
  key: string;
  args: readonly RedisArg[];
}

/** Checks a queued command against its rule; throws FENCE_BAD_WRITE before anything reaches Redis. */
export function checkCommand(command: string, key: string, args: readonly RedisArg[]): CheckedCommand {
  const name = typeof command === "string" ? command.toUpperCase() : "";
  const rule: CommandRule | undefined = Object.hasOwn(RULES, name)
    ? RULES[name as keyof typeof RULES]
    : undefined;
  if (!rule) {
    throw new FenceError(
      "FENCE_BAD_WRITE",
      `${JSON.stringify(command)} is not allowed in a fenced Redis write; allowed: ${REDIS_WRITE_COMMANDS.join(", ")}`,
    );
  }
  if (typeof key !== "string" || key.length === 0) {
    throw new FenceError("FENCE_BAD_WRITE", `${name} needs a non-empty key as its first argument`);
  }
  const wrongCount =
    args.length < rule.minArgs ||
    (rule.maxArgs !== undefined && args.length > rule.maxArgs) ||
    (rule.pairs === true && args.length % 2 !== 0);
  if (wrongCount) {
    throw new FenceError("FENCE_BAD_WRITE", `${name} ${key}: wrong number of arguments (${args.length})`);
  }
  for (const arg of args) {
    const usable =
      typeof arg === "string" || Buffer.isBuffer(arg) || (typeof arg === "number" && Number.isFinite(arg));
    if (!usable)
      throw new FenceError(
        "FENCE_BAD_WRITE",
        `${name} ${key}: arguments must be strings, Buffers or finite numbers`,
      );
  }
  return { name, keyType: rule.keyType, key, args };
}
