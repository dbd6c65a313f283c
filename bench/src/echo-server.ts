import { createServer } from "node:net";

/**
 * The raw Node socket ceiling: a server that speaks just enough of the lock protocol to satisfy the
 * load generator (every `A key … id` gets `A key 1 id`, every `R key …` gets `R key 1`) with no engine,
 * no validation, and one write per chunk. lockd's throughput divided by
 * this is the share of a Node process's socket capacity that lockd keeps.
 */
const server = createServer((socket) => {
  socket.setNoDelay(true);
  let rest = "";
  socket.setEncoding("latin1");
  socket.on("data", (chunk: string) => {
    const text = rest + chunk;
    let out = "";
    let start = 0;
    for (let end = text.indexOf("\n", start); end >= 0; end = text.indexOf("\n", start)) {
      const fields = text.slice(start, end).split(" ");
      // `A key lease wait id` -> `A key 1 id`; `R key token` -> `R key 1`.
      out += fields[0] === "A" ? `A ${fields[1]} 1 ${fields[4]}\n` : `${fields[0]} ${fields[1]} 1\n`;
      start = end + 1;
    }
    rest = text.slice(start);
    if (out) socket.write(out);
  });
  socket.on("error", () => {});
});
server.listen({ host: "127.0.0.1", port: 0 }, () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 }));
});
