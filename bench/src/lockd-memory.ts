import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { printRow } from "./report.js";
import { startLockd } from "./spawn.js";

/**
 * Memory per held lock as an operator sees it: the resident set of a real lockd process (pinned to
 * CPU 0, default flags) before and after one connection takes KEYS keys, each acquire carrying a
 * request id shaped like @lock/client's (about 40 characters; lockd keeps it as the holder's proof
 * of ownership). Keys are `jobs:<n>`, 6 to 12 bytes. lockd's heap is not collected on demand, so
 * the figure includes whatever young garbage was left (a few MiB at most: under 10 B per lock at a
 * million locks); it is an upper bound, which is what a capacity plan wants.
 */
export const MEMORY_KEYS = Number(process.env.BENCH_MEMORY_KEYS ?? 1_000_000);
const KEYS = MEMORY_KEYS;
const BATCH = 10_000;

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kib[1]) * 1024;
}

/** Sends `lines` and resolves once as many reply lines came back (every acquire here is granted at once). */
function exchange(socket: Socket, lines: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let pending = lines.length;
    const onData = (chunk: Buffer) => {
      // Replies are `A <key> <token> <id>`; an `E` line (a limit) would make the figure meaningless.
      if (chunk.includes("E ", 0, "latin1")) reject(new Error(chunk.toString("latin1", 0, 200)));
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) pending -= 1;
      if (pending === 0) {
        socket.off("data", onData);
        resolve();
      }
    };
    socket.on("data", onData);
    socket.write(lines.join(""));
  });
}

/** Prints and returns the RSS bytes per held lock; `main` measures another build's lockd. */
export async function lockdMemory(main?: string): Promise<number> {
  console.log(
    `\n# memory of a lockd process holding ${KEYS.toLocaleString("en-US")} locks (lockd on cpu 0)${main ? ` ${main}` : ""}`,
  );
  // One connection holds every key: lift the per-connection quota (default 100000) with the table.
  const served = await startLockd(
    "0",
    ["--max-keys", String(KEYS + BATCH), "--max-connection-keys", String(KEYS + BATCH)],
    main,
  );
  const socket = connect(served.port, "127.0.0.1");
  try {
    await new Promise((resolve) => socket.once("connect", resolve));
    const prefix = `k${randomBytes(8).toString("hex")}`;
    const secrets = randomBytes(8 * BATCH).toString("hex");
    const batch = (from: number) =>
      Array.from({ length: BATCH }, (_, i) => {
        const n = from + i;
        return `A jobs:${n} 600 0 ${prefix}.${n.toString(36)}.${secrets.slice(16 * i, 16 * i + 16)}\n`;
      });
    // One batch first, so the code is compiled and the buffers exist before the baseline.
    await exchange(socket, batch(KEYS));
    const pid = served.child.pid!;
    const before = rssBytes(pid);
    for (let from = 0; from < KEYS; from += BATCH) await exchange(socket, batch(from));
    const after = rssBytes(pid);
    printRow(`held locks in lockd (${KEYS.toLocaleString("en-US")})`, {
      rss_bytes_per_lock: (after - before) / KEYS,
      rss_mib: after / 2 ** 20,
    });
    return (after - before) / KEYS;
  } finally {
    socket.destroy();
    served.stop();
  }
}
