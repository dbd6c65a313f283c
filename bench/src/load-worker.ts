import { connect, type Socket } from "node:net";
import { measurementWindow, percentile } from "./report.js";

/**
 * Raw-socket load generator, run as its own (pinned) process by the benchmark driver.
 *
 * `cycle` mode: each of `inflight` slots per connection loops acquire(unique key) → release →
 * acquire…; one op = one acquire+release cycle (two requests). `contend` mode: every connection
 * loops acquire(one shared key, wait forever) → release, so each grant after the first is a handoff.
 * Prints one JSON line: ops, seconds, and the acquire round-trip latency percentiles in ms.
 */
interface Options {
  port: number;
  mode: "cycle" | "contend";
  connections: number;
  inflight: number;
  durationMs: number;
  /** `cycle` mode: "reused" (default) cycles one key per slot; "unique" takes a new key every cycle. */
  keys?: "reused" | "unique";
}

const options = JSON.parse(process.argv[2] ?? "{}") as Options;
const latencies: number[] = [];
let ops = 0;
let measuring = false;

async function openConnection(index: number): Promise<void> {
  const socket: Socket = await new Promise((resolve, reject) => {
    const s = connect({ port: options.port, host: "127.0.0.1" }, () => resolve(s));
    s.once("error", reject);
  });
  socket.setNoDelay(true);
  socket.setEncoding("latin1");
  const sentAt = new Map<string, number>();
  let out = "";
  let scheduled = false;
  const send = (line: string) => {
    out += line;
    if (!scheduled) {
      scheduled = true;
      process.nextTick(() => {
        scheduled = false;
        socket.write(out);
        out = "";
      });
    }
  };
  let cycles = 0;
  const keyFor = (slot: number) => {
    if (options.mode === "contend") return "shared";
    return options.keys === "unique" ? `c${index}s${slot}n${cycles++}` : `c${index}s${slot}`;
  };
  const acquire = (slot: number) => {
    const key = keyFor(slot);
    sentAt.set(`${key} ${slot}`, performance.now());
    // Contenders on one key need ids of their own: lockd answers an acquire whose id matches the
    // holder's with that grant (a retry), and the release from another connection is then refused.
    send(options.mode === "contend" ? `A ${key} 30 0 r${slot}-${index}\n` : `A ${key} 30 0 r${slot}\n`);
  };
  let rest = "";
  socket.on("data", (chunk: string) => {
    const text = rest + chunk;
    let start = 0;
    for (let end = text.indexOf("\n", start); end >= 0; end = text.indexOf("\n", start)) {
      const line = text.slice(start, end);
      start = end + 1;
      const fields = line.split(" ");
      if (fields[0] === "A") {
        const key = fields[1]!;
        const slot = Number.parseInt((fields[3] ?? "r0").slice(1), 10);
        const sent = `${key} ${slot}`;
        const began = sentAt.get(sent);
        sentAt.delete(sent);
        if (measuring && began !== undefined) latencies.push(performance.now() - began);
        send(`R ${key} ${fields[2]}\n`);
        // The release reply is not needed to go on: the next acquire queues behind it in order.
        if (measuring) ops += 1;
        acquire(slot);
      } else if (fields[0] === "E") {
        console.error(`error reply: ${line}`);
        process.exit(1);
      }
    }
    rest = text.slice(start);
  });
  for (let slot = 0; slot < options.inflight; slot++) acquire(slot);
}

await Promise.all(Array.from({ length: options.connections }, (_, i) => openConnection(i)));
const seconds = await measurementWindow(options.durationMs, (on) => {
  measuring = on;
});
latencies.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    ops,
    seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    samples: latencies.length,
  }),
);
process.exit(0);
