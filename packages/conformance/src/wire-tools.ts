import { connect, createServer, type Server, type Socket } from "node:net";

/** A line seen on the wire: which way, on which connection (numbered from 1), and the text. */
export interface TappedLine {
  readonly toServer: boolean;
  readonly connection: number;
  readonly text: string;
}

/**
 * A TCP listener on 127.0.0.1 for the wire tools below: it closes every socket it accepted on close.
 */
class Listener {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  constructor(onSocket: (socket: Socket) => void) {
    this.#server = createServer((socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
      socket.on("error", () => {});
      onSocket(socket);
    });
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.#server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  }

  get port(): number {
    const address = this.#server.address();
    return typeof address === "object" && address ? address.port : 0;
  }

  track(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
  }

  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** Splits a byte stream into lines (without their newline) as chunks arrive. */
function onLines(socket: Socket, each: (text: string) => void): void {
  let buffered = "";
  socket.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
      each(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
    }
  });
}

/**
 * A recording proxy in front of a lockd: forwards every byte both ways unchanged and keeps every line
 * it saw, so a case can check what a client actually sent (the id and wait of a retried acquire).
 * FaultProxy (cuts, freezes) sits between the client and the tap when a case needs faults too.
 */
export class WireTap {
  readonly lines: TappedLine[] = [];
  readonly #listener: Listener;
  #connections = 0;

  private constructor(targetPort: number) {
    this.#listener = new Listener((client) => {
      const connection = ++this.#connections;
      const upstream = connect({ host: "127.0.0.1", port: targetPort, noDelay: true });
      this.#listener.track(upstream);
      upstream.on("error", () => client.destroy());
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      client.setNoDelay(true);
      client.pipe(upstream);
      upstream.pipe(client);
      onLines(client, (text) => this.lines.push({ toServer: true, connection, text }));
      onLines(upstream, (text) => this.lines.push({ toServer: false, connection, text }));
    });
  }

  static async start(targetPort: number): Promise<WireTap> {
    const tap = new WireTap(targetPort);
    await tap.#listener.listen();
    return tap;
  }

  get port(): number {
    return this.#listener.port;
  }

  /** The lines sent to the server whose fields start with `prefix` (e.g. `["A", key]`). */
  requests(...prefix: string[]): string[][] {
    return this.#matching(true, prefix);
  }

  /** The lines the server sent whose fields start with `prefix`. */
  replies(...prefix: string[]): string[][] {
    return this.#matching(false, prefix);
  }

  close(): Promise<void> {
    return this.#listener.close();
  }

  #matching(toServer: boolean, prefix: readonly string[]): string[][] {
    return this.lines
      .filter((line) => line.toServer === toServer)
      .map((line) => line.text.split(" "))
      .filter((fields) => prefix.every((field, i) => fields[i] === field));
  }
}

/**
 * Stands in for an active that has died behind the address its standbys still redirect to: it
 * accepts a connection and resets it as soon as a line arrives, as a proxy or load balancer in
 * front of a dead node does. It keeps the first line of every client connection (peer links, which
 * start with `!`, are not counted), so a case can tell that the client went there.
 */
export class DeadNode {
  /** The first line of each client connection it reset. */
  readonly clientConnections: string[] = [];
  readonly #listener: Listener;

  private constructor() {
    this.#listener = new Listener((socket) => {
      onLines(socket, (text) => {
        if (socket.destroyed) return;
        if (!text.startsWith("!")) this.clientConnections.push(text);
        socket.resetAndDestroy();
      });
    });
  }

  static async start(): Promise<DeadNode> {
    const node = new DeadNode();
    await node.#listener.listen();
    return node;
  }

  get port(): number {
    return this.#listener.port;
  }

  close(): Promise<void> {
    return this.#listener.close();
  }
}
