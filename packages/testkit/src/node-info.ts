import { LineClient } from "./line-client.js";

/** A node's `I` fields (`role`, `active`, `epoch`, `keys`, `waiters`…), asked over a connection of its own. */
export async function nodeInfo(port: number): Promise<Record<string, string>> {
  using client = await LineClient.connect(port);
  const reply = await client.request("I");
  return Object.fromEntries(
    reply
      .split(" ")
      .slice(1)
      .map((field) => field.split("=") as [string, string]),
  );
}
