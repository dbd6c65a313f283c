import type { LineClient } from "./line-client.js";

/**
 * Takes `count` locks named `<prefix><n>` through `client`, pipelined `batch` acquires per write,
 * each with the request id `<idPrefix><n in base 36>` (default `c`; so a repeated batch replays its
 * grants; a longer prefix makes ids as long as @lock/client's). A stalled active answers
 * `NO_ACTIVE` while it confirms its role (a loaded machine): that batch goes again after a pause.
 * Resolves with how many acquires were answered `NO_ACTIVE` and sent again.
 */
export async function acquireMany(
  client: LineClient,
  {
    prefix,
    count,
    leaseSeconds,
    batch = 1_000,
    idPrefix = "c",
  }: { prefix: string; count: number; leaseSeconds: number; batch?: number; idPrefix?: string },
): Promise<number> {
  let refused = 0;
  for (let sent = 0; sent < count; ) {
    const size = Math.min(batch, count - sent);
    let lines = "";
    for (let n = sent; n < sent + size; n++)
      lines += `A ${prefix}${n} ${leaseSeconds} 0 ${idPrefix}${n.toString(36)}\n`;
    client.send(Buffer.from(lines));
    let batchRefused = 0;
    for (let i = 0; i < size; i++) {
      const reply = await client.next();
      if (reply.startsWith("A ")) continue;
      if (!reply.includes(" NO_ACTIVE ")) throw new Error(`acquire refused: ${reply}`);
      batchRefused += 1;
    }
    if (batchRefused === 0) {
      sent += size;
      continue;
    }
    refused += batchRefused;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return refused;
}
