import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { LockdCluster, REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { PrometheusServer } from "./prometheus-server.js";

/**
 * deploy/prometheus and deploy/grafana against the real thing: `promtool test rules` on the rules'
 * unit tests, then a real Prometheus, configured from deploy/prometheus/prometheus.yml, scraping a
 * real 3-node lockd cluster (admin servers with an admin token); the active is killed and
 * LockdActiveDown must fire. The Grafana dashboard's queries run on the same Prometheus.
 */
const run = promisify(execFile);
const PROMETHEUS = join(REPO_ROOT, "deploy", "prometheus");
const DASHBOARD = join(REPO_ROOT, "deploy", "grafana", "lockd.json");
const ADMIN_TOKEN = randomBytes(24).toString("hex");

let folder: string;
let cluster: LockdCluster;
let prometheus: PrometheusServer;
/** The admin address of node i, as Prometheus labels it (`instance`). */
const instance = (i: number) => `127.0.0.1:${cluster.nodes[i]!.adminPort}`;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "lock-monitoring-"));
  cluster = await LockdCluster.start({
    nodes: 3,
    args: ["--admin", "127.0.0.1:0"],
    env: { LOCKD_ADMIN_TOKEN: ADMIN_TOKEN },
  });
  const tokenFile = join(folder, "lockd-admin-token");
  writeFileSync(tokenFile, ADMIN_TOKEN);
  // The documented config with this cluster's targets and token, scraped and evaluated every second.
  const config = parseYaml(readFileSync(join(PROMETHEUS, "prometheus.yml"), "utf8"));
  config.global = { scrape_interval: "1s", evaluation_interval: "1s" };
  config.rule_files = [join(PROMETHEUS, "lockd-rules.yml")];
  config.scrape_configs[0].authorization.credentials_file = tokenFile;
  config.scrape_configs[0].static_configs = [{ targets: [0, 1, 2].map(instance) }];
  writeFileSync(join(folder, "checked.yml"), toYaml(config));
  await run("promtool", ["check", "config", join(folder, "checked.yml")]);
  prometheus = await PrometheusServer.start(toYaml(config), folder);
});

afterAll(async () => {
  await Promise.all([prometheus?.stop(), cluster?.dispose()]);
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
});

describe("Prometheus rules and Grafana dashboard over lockd's metrics", () => {
  it("passes promtool check rules and the rules' unit tests (promtool test rules)", async () => {
    await run("promtool", ["check", "rules", "lockd-rules.yml"], { cwd: PROMETHEUS });
    const { stdout } = await run("promtool", ["test", "rules", "lockd-rules.test.yml"], { cwd: PROMETHEUS });
    expect(stdout).toContain("SUCCESS");
  });

  it("has a dashboard whose every query parses and uses only metrics lockd exports or the rules record", async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8"));
    const panels = (dashboard.panels as Array<{ panels?: unknown[] }>).flatMap((panel) => [
      panel,
      ...(panel.panels ?? []),
    ]);
    const expressions = panels
      .flatMap((panel) => (panel as { targets?: Array<{ expr: string }> }).targets ?? [])
      .map((target) => target.expr);
    expect(expressions.length).toBeGreaterThan(10);
    const exported = await exportedMetricNames();
    const recorded = parseYaml(readFileSync(join(PROMETHEUS, "lockd-rules.yml"), "utf8"))
      .groups.flatMap((group: { rules: Array<{ record?: string }> }) => group.rules)
      .flatMap((rule: { record?: string }) => (rule.record ? [rule.record] : []));
    for (const expression of expressions) {
      // Grafana's variables as Grafana would fill them in; then Prometheus must accept the query.
      const query = expression
        .replaceAll("$__rate_interval", "1m")
        .replaceAll("$job", "lockd")
        .replaceAll("$instance", ".*");
      await expect(prometheus.query(query), expression).resolves.toBeDefined();
      const names = query.match(/\b(job:)?lockd_[a-z0-9_:]+/g) ?? [];
      expect(names.length, expression).toBeGreaterThan(0);
      expect(
        names.filter((name) => !exported.has(name) && !recorded.includes(name)),
        expression,
      ).toEqual([]);
    }
    // Its variables find the cluster.
    expect(JSON.stringify(dashboard.templating)).toContain("label_values(lockd_is_active, job)");
  });

  it("fires LockdActiveDown for the active once it is killed (a real Prometheus scraping a real cluster)", async () => {
    // Since start: node 0 may well be serving already (the log entry came before this test).
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await prometheus.until(
      "every node scraped, node 0 the only active",
      async () => {
        const active = await prometheus.query("lockd_is_active");
        return (
          active.length === 3 &&
          active.every((s) => s.value[1] === (s.metric.instance === instance(0) ? "1" : "0"))
        );
      },
      30_000,
    );
    const killed = instance(0);
    await cluster.nodes[0]!.kill("SIGKILL");
    await prometheus.until(
      "LockdActiveDown to fire for the killed active",
      async () =>
        (await prometheus.alerts()).some(
          (alert) =>
            alert.labels.alertname === "LockdActiveDown" &&
            alert.labels.instance === killed &&
            alert.state === "firing",
        ),
      60_000,
    );
    const alerts = await prometheus.alerts();
    // The standby that took over is no "active down"; nor is a node down yet besides the killed one.
    expect(
      alerts
        .filter((alert) => alert.labels.alertname === "LockdActiveDown")
        .map((alert) => alert.labels.instance),
    ).toEqual([killed]);
    expect(alerts.filter((alert) => alert.labels.alertname === "LockdNodeDown")).toEqual([]);
  });
});

/** Metric names in one node's /metrics (the TYPE lines), with a histogram's series names. */
async function exportedMetricNames(): Promise<Set<string>> {
  const response = await fetch(`http://${instance(1)}/metrics`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const text = await response.text();
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === "histogram")
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${name}${suffix}`);
  }
  return names;
}
