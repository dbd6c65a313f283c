import type { LockdProcess } from "@lock/testkit";

/**
 * Resolves once the node's `/readyz` answers 200 (an active that serves, or a standby in sync with
 * it), as an operator's rolling restart waits before the next node. lockd logs no event for "in
 * sync", so this asks, every 50 ms, for at most `timeoutMs`.
 */
export async function untilReady(node: LockdProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "no answer";
  while (performance.now() < deadline) {
    try {
      const response = await fetch(`http://127.0.0.1:${node.adminPort}/readyz`);
      last = await response.text();
      if (response.status === 200) return;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Its latest warnings and errors say why (a refused link, a peer lost).
  const warnings = node.logs.filter((entry) => Number(entry.level) >= 40).slice(-5);
  throw new Error(
    `node ${node.address} not ready within ${timeoutMs} ms: ${last}; ${JSON.stringify(warnings)}`,
  );
}
