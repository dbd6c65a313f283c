import { createHash } from "node:crypto";
import type { RedisArg } from "./commands.js";

/** The part of an ioredis Redis or Cluster client that scripts need. */
export interface RedisScriptClient {
  evalsha(sha: string, numkeys: number, ...keysAndArgs: RedisArg[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...keysAndArgs: RedisArg[]): Promise<unknown>;
}

/**
 * A Lua script run by EVALSHA, falling back to EVAL when the server does not have it cached (first use,
 * after SCRIPT FLUSH, a restart or a failover); EVAL caches it again. Unlike ioredis defineCommand, it
 * leaves the caller's client untouched.
 */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash("sha1").update(source).digest("hex");
  }

  run(client: RedisScriptClient, keys: readonly string[], args: readonly RedisArg[]): Promise<unknown> {
    // A plain promise chain, not an async function: this runs once per fenced call, on its critical path.
    return client.evalsha(this.sha, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    });
  }
}
