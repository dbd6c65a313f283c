import { connect, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls, type TLSSocket } from "node:tls";

/**
 * A raw protocol client for tests: writes lines as given and reads reply lines one by one, so a
 * test can check the exact bytes lockd sends. No reconnects, no matching: that is the real
 * client's job.
 */
export class LineClient {
  readonly socket: Socket;
  readonly #lines: string[] = [];
  readonly #waiting: Array<{ resolve(line: string): void; reject(error: Error): void }> = [];
  #buffer = "";
  #ended = false;
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.#onData(chunk));
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    socket.once("close", () => {
      this.#ended = true;
      for (const waiter of this.#waiting.splice(0)) waiter.reject(new Error("connection closed"));
    });
  }

  static connect(port: number, host = "127.0.0.1"): Promise<LineClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host });
      socket.once("connect", () => resolve(new LineClient(socket)));
      socket.once("error", reject);
    });
  }

  /**
   * Connects over TLS (`options` as for `tls.connect`: `ca`, `servername`…); the certificate the
   * server presented is `(client.socket as TLSSocket).getPeerCertificate()`.
   */
  static connectTls(port: number, options: ConnectionOptions, host = "127.0.0.1"): Promise<LineClient> {
    return new Promise((resolve, reject) => {
      const socket: TLSSocket = connectTls({ ...options, port, host });
      socket.once("secureConnect", () => resolve(new LineClient(socket)));
      socket.once("error", reject);
    });
  }

  /** Writes `line` and a newline (or the raw bytes given). */
  send(line: string | Buffer): void {
    this.socket.write(typeof line === "string" ? `${line}\n` : line);
  }

  /** The next reply line, without its newline. Rejects if the connection closes first. */
  next(): Promise<string> {
    const line = this.#lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.#ended) return Promise.reject(new Error("connection closed"));
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  /** Sends `line` and returns the next reply line. */
  async request(line: string): Promise<string> {
    this.send(line);
    return this.next();
  }

  /** Lines received but not yet read with `next()`. */
  get buffered(): readonly string[] {
    return this.#lines;
  }

  close(): void {
    this.socket.destroy();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #onData(chunk: string): void {
    const text = this.#buffer + chunk;
    let start = 0;
    // One pass over the chunk (a large pipelined reply burst is thousands of lines).
    for (let index = text.indexOf("\n"); index >= 0; index = text.indexOf("\n", start)) {
      const line = text.slice(start, index);
      start = index + 1;
      const waiter = this.#waiting.shift();
      if (waiter) waiter.resolve(line);
      else this.#lines.push(line);
    }
    this.#buffer = text.slice(start);
  }
}

/** LineClients a test opened, closed together after it (`afterEach(() => clients.closeAll())`). */
export class LineClients {
  readonly #open: LineClient[] = [];

  async connect(port: number): Promise<LineClient> {
    const client = await LineClient.connect(port);
    this.#open.push(client);
    return client;
  }

  closeAll(): void {
    for (const client of this.#open.splice(0)) client.close();
  }
}

/** The token of a grant reply (`A <key> <token> …`, `Q …`, `Y …`, `W …`). */
export function grantToken(reply: string): bigint {
  return BigInt(reply.split(" ")[2]!);
}
