import type { ErrorCode, Reply, UnwatchRequest, WatchRequest } from "@lock/protocol";
import type { ConnectionWatches, WatchRegistry } from "../watch/watch-registry.js";

type SendError = (op: "O", key: string, id: undefined, code: ErrorCode, message: string) => void;

/**
 * One session's watch verbs (`O`, `U`; docs/protocol.md, "Watching a key"), beside LockVerbs, which
 * routes them here once the node serves (a standby redirects them like any lock verb). Its watches
 * live in the node's registry from the first `O` until `U`, the session's end, or a step-down.
 */
export class WatchVerbs {
  readonly #registry: WatchRegistry;
  readonly #send: (reply: Reply) => void;
  readonly #error: SendError;
  #watches: ConnectionWatches | undefined = undefined;

  constructor(registry: WatchRegistry, send: (reply: Reply) => void, error: SendError) {
    this.#registry = registry;
    this.#send = send;
    this.#error = error;
  }

  run(request: WatchRequest | UnwatchRequest): void {
    const { key } = request;
    if (request.op === "U") {
      this.#send({ kind: "U", key, watched: this.#watches?.unwatch(key) ?? false });
      return;
    }
    this.#watches ??= this.#registry.connection(this.#send);
    const answer = this.#watches.watch(key);
    if (typeof answer === "object") this.#send(answer);
    else this.#error("O", key, undefined, answer, refusal(answer, this.#registry));
  }

  /**
   * The node stopped serving with this session still open: every watch ends with a pushed redirect to
   * `address` (the new active), or `NO_ACTIVE` while none is known, so the client watches there.
   */
  moved(address: string | undefined): void {
    const watches = this.#watches;
    if (watches === undefined) return;
    for (const key of watches.keys()) {
      if (address === undefined)
        this.#error(
          "O",
          key,
          undefined,
          "NO_ACTIVE",
          "this node stopped being the active; watch again shortly",
        );
      else this.#send({ kind: "M", op: "O", key, address });
    }
    this.close();
  }

  /** The session is over: its watches end. */
  close(): void {
    this.#watches?.end();
    this.#watches = undefined;
  }
}

function refusal(code: ErrorCode, registry: WatchRegistry): string {
  return code === "TOO_MANY_WATCHES"
    ? `the server watches ${registry.count} keys, its limit`
    : "this connection watches as many keys as the server allows one connection";
}
