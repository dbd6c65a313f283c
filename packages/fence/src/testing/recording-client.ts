import type { RedisFenceClient } from "../redis/index.js";

/** Each command a store sent through a recording client: its name and its arguments (keys first). */
export interface SentCommand {
  name: "GET" | "EVALSHA" | "EVAL";
  args: readonly unknown[];
}

/**
 * `client` as a RedisStore sees it, recording every command the store sends through it. The store
 * awaits each reply before it sends the next command, so each one is a round trip.
 */
export function recordingClient(client: RedisFenceClient): { client: RedisFenceClient; sent: SentCommand[] } {
  const sent: SentCommand[] = [];
  return {
    sent,
    client: {
      get: (key) => {
        sent.push({ name: "GET", args: [key] });
        return client.get(key);
      },
      evalsha: (sha, numkeys, ...rest) => {
        sent.push({ name: "EVALSHA", args: [sha, numkeys, ...rest] });
        return client.evalsha(sha, numkeys, ...rest);
      },
      eval: (script, numkeys, ...rest) => {
        sent.push({ name: "EVAL", args: [numkeys, ...rest] });
        return client.eval(script, numkeys, ...rest);
      },
    },
  };
}
