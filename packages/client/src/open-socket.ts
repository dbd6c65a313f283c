import { connect as connectTcp } from "node:net";
import { connect as connectTls } from "node:tls";
import { splitAddress } from "@lock/protocol";
import type { ResolvedOptions } from "./options.js";
import { serverName } from "./options.js";
import type { ClientSocket, SocketReader } from "./socket.js";

const READ_BUFFER_BYTES = 64 * 1024;

/** Opens the socket of one connection: `connect`'s own, or `node:net` / `node:tls`. */
export function openSocket(address: string, options: ResolvedOptions, reader: SocketReader): ClientSocket {
  const { host, port } = splitAddress(address);
  if (options.connect !== undefined) {
    const socket = options.connect({ host, port, address });
    socket.on("connect", () => reader.onConnect());
    socket.on("data", (chunk) => reader.onData(chunk));
    return socket;
  }
  const tls = options.tls;
  if (tls) {
    const socket = connectTls({ servername: serverName(host), ...tls, host, port });
    // A TLS socket's `connect` comes before the handshake: it is ready at `secureConnect`.
    socket.on("secureConnect", () => reader.onConnect());
    socket.on("data", (chunk: Buffer) => reader.onData(chunk));
    return socket;
  }
  // Plain TCP reads into one reused buffer (`onread`), skipping the stream machinery on every
  // reply; the decoder copies what it keeps, so the buffer may be overwritten by the next read.
  const socket = connectTcp({
    host,
    port,
    onread: {
      buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
      callback: (bytes: number, buffer: Uint8Array) => {
        reader.onData(buffer.subarray(0, bytes));
        return true;
      },
    },
  });
  socket.on("connect", () => reader.onConnect());
  return socket;
}
