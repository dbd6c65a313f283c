import { connect as connectTcp, isIP, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls } from "node:tls";
import { parseReplyLine, splitAddress } from "@lock/protocol";

export interface ProbeOptions {
  readonly authToken?: string | undefined;
  readonly tls?: ConnectionOptions | undefined;
  readonly timeoutMs: number;
}

/** Why a node did not answer: `auth` when it refused the token, `down` for everything else. */
export class ProbeError extends Error {
  override readonly name = "ProbeError";
  readonly reason: "down" | "auth";

  constructor(reason: "down" | "auth", message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * Asks one lockd node for its `I` fields over a connection of its own (`H <token>` first when there
 * is a token), then closes it. @lock/client has no public `I`, and it should not: it sends every
 * request to the active, while `lock status` wants each node's own answer, standbys included (a
 * standby answers `I` itself rather than redirect it). Rejects with a ProbeError within `timeoutMs`.
 */
export function probeInfo(address: string, options: ProbeOptions): Promise<Map<string, string>> {
  const { host, port } = splitAddress(address);
  return new Promise((resolve, reject) => {
    const socket: Socket = options.tls
      ? connectTls({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}), ...options.tls })
      : connectTcp({ host, port });
    const fail = (reason: "down" | "auth", message: string) => {
      socket.destroy();
      reject(new ProbeError(reason, message));
    };
    const timer = setTimeout(
      () => fail("down", `no answer within ${options.timeoutMs} ms`),
      options.timeoutMs,
    );
    socket.once("close", () => {
      clearTimeout(timer);
      reject(new ProbeError("down", "connection closed before the answer"));
    });
    socket.on("error", (error: NodeJS.ErrnoException) => fail("down", error.code ?? error.message));
    socket.once(options.tls ? "secureConnect" : "connect", () => {
      socket.write(`${options.authToken !== undefined ? `H ${options.authToken}\n` : ""}I\n`);
    });
    let buffered = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
        const line = buffered.slice(0, end).replace(/\r$/, "");
        const reply = parseReplyLine(line);
        buffered = buffered.slice(end + 1);
        if (reply.kind === "H") continue;
        if (reply.kind === "I") {
          clearTimeout(timer);
          resolve(new Map(reply.fields));
          socket.destroy();
          return;
        }
        if (reply.kind === "E") {
          const auth = reply.code === "AUTH_FAILED" || reply.code === "NOT_AUTHENTICATED";
          fail(auth ? "auth" : "down", `${reply.code}${reply.message ? ` (${reply.message})` : ""}`);
          return;
        }
        fail("down", `answered ${JSON.stringify(line.slice(0, 60))}, not an I reply: is this a lockd port?`);
        return;
      }
    });
  });
}
