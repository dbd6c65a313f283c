import { createServer, type Server, type Socket } from "node:net";
import { LineClient, type LockdProcess, nodeInfo } from "@lock/testkit";
import type { ClientEventName, ClientEvents, LockClient } from "./index.js";

/** Helpers for the tests that run the client against real lockd processes. */

/** The next `name` event (that `accept` takes) from `client`. Rejects after `timeoutMs`. */
export function nextEvent<K extends ClientEventName>(
  client: LockClient,
  name: K,
  accept: (event: ClientEvents[K]) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<ClientEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off(name, listener);
      reject(new Error(`no ${name} event within ${timeoutMs} ms`));
    }, timeoutMs);
    // A waiter that lost a race must not hold the test process open.
    timer.unref();
    const listener = (event: ClientEvents[K]) => {
      if (!accept(event)) return;
      clearTimeout(timer);
      client.off(name, listener);
      resolve(event);
    };
    client.on(name, listener);
  });
}

/** Resolves once every connection of `client` is open. */
export async function allConnected(client: LockClient): Promise<void> {
  while (client.connections.some((connection) => connection.state !== "ready")) {
    await nextEvent(client, "connect");
  }
}

/**
 * Polls `check` until it returns true: for server-side facts that no event announces (a waiter
 * queued, a key freed). Rejects after `timeoutMs`; the test then fails on the condition, not on a
 * duration.
 */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The server's `I` fields, over a connection of its own. */
export async function serverInfo(lockd: LockdProcess): Promise<Map<string, string>> {
  return new Map(Object.entries(await nodeInfo(lockd.port)));
}

/** Keys held and acquires queued on the server. */
export async function serverCounts(lockd: LockdProcess): Promise<{ keys: number; waiters: number }> {
  const info = await serverInfo(lockd);
  return { keys: Number(info.get("keys")), waiters: Number(info.get("waiters")) };
}

/** A raw holder of `key` on its own connection, so the client under test has to wait for it. */
export async function holdKey(
  lockd: LockdProcess,
  key: string,
): Promise<{ release(): Promise<string>; close(): void }> {
  const line = await LineClient.connect(lockd.port);
  const granted = await line.request(`A ${key} 60 0 holder`);
  const token = granted.split(" ")[2];
  if (!granted.startsWith("A ") || token === undefined) throw new Error(`could not hold ${key}: ${granted}`);
  return { release: () => line.request(`R ${key} ${token}`), close: () => line.close() };
}

/** True if `key` is free on the server right now (probed with a try-acquire that is released at once). */
export async function isFree(lockd: LockdProcess, key: string): Promise<boolean> {
  const line = await LineClient.connect(lockd.port);
  try {
    const reply = await line.request(`Y ${key} 1 probe`);
    if (!reply.startsWith("Y ")) return false;
    await line.request(`R ${key} ${reply.split(" ")[2]}`);
    return true;
  } finally {
    line.close();
  }
}

// Where each verb carries its (optional) id: `A key lease wait id`, `Y key lease id`, `C key id`.
const ID_FIELD: Record<string, number> = { A: 4, Y: 3, C: 2 };

/**
 * A fake standby: answers every request line with `M <verb> <key> <active> [<id>]`, as a standby of
 * a cluster does, except `P` (answered) and `H` (accepted). Counts the lines it redirected.
 */
export class FakeStandby {
  redirected = 0;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(active: string): Promise<FakeStandby> {
    const server = createServer();
    const standby = new FakeStandby(server);
    server.on("connection", (socket) => standby.#serve(socket, active));
    await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
    return standby;
  }

  get address(): string {
    const address = this.#server.address();
    return `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #serve(socket: Socket, active: string): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", () => {});
    socket.setEncoding("utf8");
    let buffered = "";
    socket.on("data", (chunk: string) => {
      buffered += chunk;
      let out = "";
      for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
        const fields = buffered.slice(0, newline).split(" ");
        buffered = buffered.slice(newline + 1);
        const [verb = "", key = "-"] = fields;
        if (verb === "P") out += "P\n";
        else if (verb === "H") out += "H\n";
        else {
          const id = fields[ID_FIELD[verb] ?? -1];
          out += `M ${verb} ${verb === "I" ? "-" : key} ${active}${id === undefined ? "" : ` ${id}`}\n`;
          this.redirected++;
        }
      }
      if (out) socket.write(out);
    });
  }
}
