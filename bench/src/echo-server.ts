import { createServer, type Socket } from "node:net";
import { readIntoSharedBuffer, SocketWriter, useFastIo } from "@lock/socket-io";

/**
 * The raw Node socket ceiling: a server that speaks just enough of the lock protocol to satisfy the
 * load generator (every `A key … id` gets `A key 1 id`, every `R key …` gets `R key 1`) with no engine,
 * no validation, and one write per chunk, over the same socket I/O as lockd (`@lock/socket-io`): the
 * public stream API by default, the fast paths (reads into one shared buffer, writes straight into
 * the handle) when LOCKD_FAST_IO=1, which the benchmarks pass on to lockd too. lockd's throughput
 * divided by this is the share of a Node process's socket capacity that lockd keeps.
 */
if (process.env.LOCKD_FAST_IO === "1") useFastIo(true);
function serve(accepted: Socket): void {
  let rest = "";
  let writer: SocketWriter | undefined;
  const receive = (chunk: Buffer) => {
    const text = rest + chunk.toString("latin1");
    let out = "";
    let start = 0;
    for (let end = text.indexOf("\n", start); end >= 0; end = text.indexOf("\n", start)) {
      const fields = text.slice(start, end).split(" ");
      // `A key lease wait id` -> `A key 1 id`; `R key token` -> `R key 1`.
      out += fields[0] === "A" ? `A ${fields[1]} 1 ${fields[4]}\n` : `${fields[0]} ${fields[1]} 1\n`;
      start = end + 1;
    }
    rest = text.slice(start);
    if (out) writer?.write(out);
  };
  const socket = readIntoSharedBuffer(accepted, receive) ?? accepted;
  if (socket === accepted) socket.on("data", receive).resume();
  socket.setNoDelay(true);
  writer = new SocketWriter(socket, () => {});
  socket.on("error", () => {});
}

const server = createServer({ pauseOnConnect: true }, serve);
server.listen({ host: "127.0.0.1", port: 0 }, () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 }));
});
