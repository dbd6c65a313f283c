import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One etcd member of an EtcdCluster: its client endpoint (`127.0.0.1:port`) and process. */
export interface EtcdMember {
  readonly name: string;
  readonly endpoint: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  /** Its last lines of output, for a failure message. */
  readonly output: string[];
}

export interface EtcdClusterOptions {
  /** Members (default 1). */
  readonly members?: number;
  /** How long to wait for the cluster to serve (default 15 s, under vitest's hook timeout). */
  readonly readyTimeoutMs?: number;
  /**
   * Serve clients over HTTPS with this certificate (a self-signed one is its own CA), and require
   * client certificates signed by it.
   */
  readonly tls?: {
    readonly certPath: string;
    readonly keyPath: string;
    readonly cert: Buffer;
    readonly key: Buffer;
  };
}

/**
 * Short raft timings (default 100 ms / 1000 ms): a killed leader is replaced in about half a
 * second, and etcd's smallest lease TTL (1.5 election timeouts) is under one second, so the 1 s
 * leases of the tests are not raised.
 */
const HEARTBEAT_MS = 50;
const ELECTION_TIMEOUT_MS = 500;
const POLL_MS = 50;

/** A free TCP port on 127.0.0.1 (bound, then released for etcd to take). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/** Every member still running, killed when the test process exits however it exits (no orphans). */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

type Tls = EtcdClusterOptions["tls"];

function getJson(tls: Tls, endpoint: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const [host, port] = endpoint.split(":");
  return new Promise((resolve, reject) => {
    const options = {
      host,
      port: Number(port),
      path,
      method: body === undefined ? "GET" : "POST",
      timeout: 1000,
    };
    const onResponse = (response: http.IncomingMessage) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => {
        try {
          resolve(JSON.parse(text) as Record<string, unknown>);
        } catch (error) {
          reject(error);
        }
      });
      response.on("error", reject);
    };
    const request = tls
      ? https.request({ ...options, ca: tls.cert, cert: tls.cert, key: tls.key }, onResponse)
      : http.request(options, onResponse);
    request.on("timeout", () => request.destroy(new Error("no answer")));
    request.on("error", reject);
    request.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/**
 * Real etcd processes (the Debian package's `etcd`, installed by .ci/etcd.sh) on free loopback
 * ports with temporary data directories: one member, or a cluster whose leader a test can find and
 * kill. `await using` (or `dispose()`) kills every member and removes the data.
 */
export class EtcdCluster {
  readonly members: EtcdMember[];
  readonly #dataDir: string;
  readonly #tls: Tls;

  private constructor(members: EtcdMember[], dataDir: string, tls: Tls) {
    this.members = members;
    this.#dataDir = dataDir;
    this.#tls = tls;
  }

  static async start(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    const count = options.members ?? 1;
    const dataDir = mkdtempSync(join(tmpdir(), "etcd-test-"));
    const plan = [];
    for (let index = 0; index < count; index++) {
      plan.push({ name: `n${index + 1}`, clientPort: await freePort(), peerPort: await freePort() });
    }
    const token = `test-${plan[0]!.clientPort}`; // one per cluster: members with another token refuse each other
    const initialCluster = plan
      .map((member) => `${member.name}=http://127.0.0.1:${member.peerPort}`)
      .join(",");
    const members = plan.map(({ name, clientPort, peerPort }): EtcdMember => {
      const clientUrl = `${options.tls ? "https" : "http"}://127.0.0.1:${clientPort}`;
      const tlsFlags = options.tls
        ? [
            "--cert-file",
            options.tls.certPath,
            "--key-file",
            options.tls.keyPath,
            "--trusted-ca-file",
            options.tls.certPath,
            "--client-cert-auth",
          ]
        : [];
      const peerUrl = `http://127.0.0.1:${peerPort}`;
      // biome-ignore format: one flag and its value a line
      const child = spawn("etcd", [
        "--name", name,
        "--data-dir", join(dataDir, name),
        "--listen-client-urls", clientUrl,
        "--advertise-client-urls", clientUrl,
        "--listen-peer-urls", peerUrl,
        "--initial-advertise-peer-urls", peerUrl,
        "--initial-cluster", initialCluster,
        "--initial-cluster-state", "new",
        "--initial-cluster-token", token,
        "--heartbeat-interval", String(HEARTBEAT_MS),
        "--election-timeout", String(ELECTION_TIMEOUT_MS),
        "--log-level", "error",
        "--logger", "zap",
        ...tlsFlags,
      ], { stdio: ["ignore", "pipe", "pipe"] });
      const output: string[] = [];
      const keep = (chunk: Buffer) => {
        output.push(chunk.toString("utf8"));
        if (output.length > 50) output.shift();
      };
      child.stdout!.on("data", keep);
      child.stderr!.on("data", keep);
      running.add(child);
      // A child that never started (no `etcd` on PATH) emits "error" and no "exit": it is gone too.
      const exited = new Promise<void>((resolve) => {
        const gone = () => {
          running.delete(child);
          resolve();
        };
        child.once("exit", gone);
        child.once("error", (error) => {
          output.push(String(error));
          if (child.pid === undefined) gone();
        });
      });
      return { name, endpoint: `127.0.0.1:${clientPort}`, child, exited, output };
    });
    const cluster = new EtcdCluster(members, dataDir, options.tls);
    try {
      await cluster.#waitHealthy(options.readyTimeoutMs ?? 15_000);
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    return cluster;
  }

  /** The client endpoints (`127.0.0.1:port`) of every member, killed ones included. */
  get endpoints(): string[] {
    return this.members.map((member) => member.endpoint);
  }

  /** The member that is the raft leader now, asking the living members. */
  async leader(): Promise<EtcdMember> {
    for (const member of this.#alive()) {
      try {
        const status = await getJson(this.#tls, member.endpoint, "/v3/maintenance/status", {});
        const header = status.header as { member_id?: string } | undefined;
        if (status.leader !== undefined && status.leader === header?.member_id) return member;
      } catch {
        // a member that is starting or dying: ask the next one
      }
    }
    throw new Error("no etcd member says it is the leader");
  }

  /** Kills `member` with SIGKILL and waits for its exit. */
  async kill(member: EtcdMember): Promise<void> {
    member.child.kill("SIGKILL");
    await member.exited;
  }

  async dispose(): Promise<void> {
    await Promise.all(this.members.map((member) => this.kill(member)));
    rmSync(this.#dataDir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }

  #alive(): EtcdMember[] {
    return this.members.filter(
      (member) => member.child.exitCode === null && member.child.signalCode === null,
    );
  }

  /** Polls every member's /health until each says true (a leader is elected and it serves). */
  async #waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const pending = new Set(this.members);
    while (pending.size > 0) {
      for (const member of pending) {
        if (member.child.exitCode !== null) {
          throw new Error(
            `etcd ${member.name} exited with ${member.child.exitCode}:\n${member.output.join("")}`,
          );
        }
        const health = await getJson(this.#tls, member.endpoint, "/health").catch(() => undefined);
        if (health?.health === "true") pending.delete(member);
      }
      if (pending.size === 0) return;
      if (Date.now() > deadline) {
        const names = [...pending].map((member) => `${member.name}:\n${member.output.join("")}`);
        throw new Error(`etcd did not serve within ${timeoutMs} ms: ${names.join("\n")}`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}
