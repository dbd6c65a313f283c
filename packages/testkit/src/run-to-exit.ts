import { spawn } from "node:child_process";
import { once } from "node:events";
import { LOCKD_MAIN } from "./paths.js";

/** Runs lockd with `args` (and only `env` beside PATH) to its exit, for a start that fails: status and stderr. */
export async function runLockdToExit(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [LOCKD_MAIN, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stderr };
}
