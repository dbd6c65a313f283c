export type { RedisFenceReadTx, RedisFenceTx } from "./batch.js";
export {
  REDIS_READ_COMMANDS,
  REDIS_WRITE_COMMANDS,
  type RedisArg,
  type RedisReadCommand,
  type RedisWriteCommand,
} from "./commands.js";
export { type RedisCommand, type RedisCommandsWrite, redisCommands } from "./commands-write.js";
export { LuaScript, type RedisScriptClient } from "./script.js";
export {
  DEFAULT_KEY_PREFIX,
  type RedisFenceClient,
  RedisStore,
  type RedisStoreOptions,
  redisStore,
} from "./store.js";
