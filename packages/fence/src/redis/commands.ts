/**
 * The commands a fenced Redis batch may contain: writes for fence(), reads for fenceRead(). Fixed
 * lists, because the script must know two things Redis itself cannot tell it up front: which argument
 * is the key (always the first, so the key is declared in KEYS and the batch works with key prefixes
 * and, within one hash slot, Cluster), and which key type a write needs (so a WRONGTYPE can be refused
 * before anything is written; Redis never rolls a script back). Reads and admin commands have no place
 * in a fenced write, nor writes in a fenced read.
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

/**
 * The read commands a fenced read may run (fenceRead()): each reads its first argument's key only, so
 * the key is declared in KEYS. Nothing is written but the read mark, so no key type is checked first:
 * a read of the wrong type fails the script, which then records nothing.
 */
const READ_RULES = {
  GET: exactly("any", 0),
  GETRANGE: exactly("any", 2),
  STRLEN: exactly("any", 0),
  HGET: exactly("any", 1),
  HMGET: unbounded("any", 1),
  HGETALL: exactly("any", 0),
  HKEYS: exactly("any", 0),
  HVALS: exactly("any", 0),
  HLEN: exactly("any", 0),
  HEXISTS: exactly("any", 1),
  LRANGE: exactly("any", 2),
  LLEN: exactly("any", 0),
  LINDEX: exactly("any", 1),
  SMEMBERS: exactly("any", 0),
  SISMEMBER: exactly("any", 1),
  SCARD: exactly("any", 0),
  ZRANGE: unbounded("any", 2),
  ZSCORE: exactly("any", 1),
  ZCARD: exactly("any", 0),
  ZRANK: exactly("any", 1),
  XRANGE: unbounded("any", 2),
  XLEN: exactly("any", 0),
  EXISTS: exactly("any", 0),
  TYPE: exactly("any", 0),
  TTL: exactly("any", 0),
  PTTL: exactly("any", 0),
} as const satisfies Record<string, CommandRule>;

/** A command a fenced batch may run; case-insensitive at runtime. */
export type RedisWriteCommand = keyof typeof RULES | Lowercase<keyof typeof RULES>;

export const REDIS_WRITE_COMMANDS = Object.keys(RULES) as readonly (keyof typeof RULES)[];

/** A command a fenced read may run; case-insensitive at runtime. */
export type RedisReadCommand = keyof typeof READ_RULES | Lowercase<keyof typeof READ_RULES>;

export const REDIS_READ_COMMANDS = Object.keys(READ_RULES) as readonly (keyof typeof READ_RULES)[];

/** The commands a batch may hold, and the code its refusals carry. */
export interface CommandSet {
  readonly rules: Readonly<Record<string, CommandRule>>;
  readonly code: "FENCE_BAD_WRITE" | "FENCE_BAD_READ";
  /** "write" or "read", for messages. */
  readonly use: string;
}

export const WRITE_COMMANDS: CommandSet = { rules: RULES, code: "FENCE_BAD_WRITE", use: "write" };
export const READ_COMMANDS: CommandSet = { rules: READ_RULES, code: "FENCE_BAD_READ", use: "read" };

export type RedisArg = string | number | Buffer;

export interface CheckedCommand {
  name: string;
  keyType: KeyType;
  key: string;
  args: readonly RedisArg[];
}

/** Checks a queued command against its rule in `set`; throws the set's code before anything reaches Redis. */
export function checkCommand(
  set: CommandSet,
  command: string,
  key: string,
  args: readonly RedisArg[],
): CheckedCommand {
  const name = typeof command === "string" ? command.toUpperCase() : "";
  const rule: CommandRule | undefined = Object.hasOwn(set.rules, name) ? set.rules[name] : undefined;
  if (!rule) {
    throw new FenceError(
      set.code,
      `${JSON.stringify(command)} is not allowed in a fenced Redis ${set.use}; allowed: ${Object.keys(set.rules).join(", ")}`,
    );
  }
  if (typeof key !== "string" || key.length === 0) {
    throw new FenceError(set.code, `${name} needs a non-empty key as its first argument`);
  }
  const wrongCount =
    args.length < rule.minArgs ||
    (rule.maxArgs !== undefined && args.length > rule.maxArgs) ||
    (rule.pairs === true && args.length % 2 !== 0);
  if (wrongCount) {
    throw new FenceError(set.code, `${name} ${key}: wrong number of arguments (${args.length})`);
  }
  for (const arg of args) {
    const usable =
      typeof arg === "string" || Buffer.isBuffer(arg) || (typeof arg === "number" && Number.isFinite(arg));
    if (!usable)
      throw new FenceError(set.code, `${name} ${key}: arguments must be strings, Buffers or finite numbers`);
  }
  return { name, keyType: rule.keyType, key, args };
}

/** Refuses (the set's code) a command whose key is a fence key: under `fencePrefix`, the store's. */
export function assertNotFenceKey(set: CommandSet, command: CheckedCommand, fencePrefix: string): void {
  if (command.key.startsWith(fencePrefix)) {
    throw new FenceError(
      set.code,
      `${command.name} ${command.key}: keys under the fence prefix are reserved`,
    );
  }
}
