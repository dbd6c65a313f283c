import { type ChildProcess, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * A Prometheus server of our own (Debian's `prometheus`): a temporary folder for its data and
 * config, on a loopback address of its own (127.a.b.c:9090, so no port has to be picked and
 * released). `query` and `alerts` use its HTTP API.
 */
export class PrometheusServer {
  readonly url: string;
  readonly #child: ChildProcess;
  readonly #dir: string;
  readonly #stderr: string[];

  private constructor(child: ChildProcess, dir: string, url: string, stderr: string[]) {
    this.#child = child;
    this.#dir = dir;
    this.url = url;
    this.#stderr = stderr;
  }

  /** Starts Prometheus on `config` (YAML text; relative paths in it are relative to `folder`). */
  static async start(config: string, folder: string): Promise<PrometheusServer> {
    const dir = mkdtempSync(join(tmpdir(), "lock-prometheus-"));
    const configFile = join(folder, "prometheus.yml");
    writeFileSync(configFile, config);
    const address = `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}:9090`;
    const child = spawn(
      "prometheus",
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=${address}`,
        "--log.level=warn",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    const stderr: string[] = [];
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
    const server = new PrometheusServer(child, dir, `http://${address}`, stderr);
    await server.until(
      "Prometheus to be ready",
      async () => (await fetch(`${server.url}/-/ready`)).ok,
      30_000,
    );
    return server;
  }

  /** An instant query's result vector. */
  async query(
    expression: string,
  ): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
    const response = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(expression)}`);
    const body = (await response.json()) as { status: string; error?: string; data: { result: never[] } };
    if (body.status !== "success") throw new Error(`query ${expression}: ${body.error}`);
    return body.data.result;
  }

  /** Alerts pending or firing now. */
  async alerts(): Promise<Array<{ labels: Record<string, string>; state: string }>> {
    const body = (await (await fetch(`${this.url}/api/v1/alerts`)).json()) as {
      data: { alerts: Array<{ labels: Record<string, string>; state: string }> };
    };
    return body.data.alerts;
  }

  /**
   * Polls `check` (every 200 ms) until it returns true; fails after `timeoutMs` saying what it
   * waited for. Prometheus has no push to await: its state changes at scrapes and evaluations.
   */
  async until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.#child.exitCode !== null) throw new Error(`prometheus exited: ${this.#stderr.join("")}`);
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
      await sleep(200);
    }
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null) {
      const exited = new Promise((resolve) => this.#child.once("exit", resolve));
      this.#child.kill("SIGTERM");
      await exited;
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
