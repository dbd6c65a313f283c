import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { LockdCluster, REPO_ROOT } from "@lock/testkit";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Service } from "kubernetes-models/v1/Service";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * deploy/kubernetes/lockd.yaml against the Kubernetes object schemas (kubernetes-models: validators
 * generated from Kubernetes' OpenAPI schemas, and their TypeScript types, whose excess-property
 * check catches a misspelt field the schemas would let through), then against lockd itself: each
 * pod's environment through lockd's own config parser, and the preStop hook stopping a real
 * active, which hands its role over.
 */
const run = promisify(execFile);
const MANIFESTS = join(REPO_ROOT, "deploy", "kubernetes", "lockd.yaml");
const documents = parseAllDocuments(readFileSync(MANIFESTS, "utf8")).map((document) => document.toJS());
const MODELS = {
  "v1/Service": { model: Service, type: "IService", module: "kubernetes-models/v1/Service" },
  "apps/v1/StatefulSet": {
    model: StatefulSet,
    type: "IStatefulSet",
    module: "kubernetes-models/apps/v1/StatefulSet",
  },
  "policy/v1/PodDisruptionBudget": {
    model: PodDisruptionBudget,
    type: "IPodDisruptionBudget",
    module: "kubernetes-models/policy/v1/PodDisruptionBudget",
  },
} as const;
const modelOf = (document: { apiVersion: string; kind: string }) =>
  MODELS[`${document.apiVersion}/${document.kind}` as keyof typeof MODELS];
const byKind = (kind: string) => documents.find((document) => document.kind === kind);

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe("the Kubernetes manifests", () => {
  it("validate against the Kubernetes object schemas", () => {
    expect(documents.map((document) => document.kind)).toEqual([
      "Service",
      "StatefulSet",
      "PodDisruptionBudget",
    ]);
    for (const document of documents) {
      const { model: Model } = modelOf(document);
      expect(() => new Model(document).validate(), document.kind).not.toThrow();
    }
    // The check can fail: a field of the wrong type is refused.
    const broken = structuredClone(byKind("StatefulSet"));
    broken.spec.replicas = "three";
    expect(() => new StatefulSet(broken).validate()).toThrow(/replicas/);
  });

  it("have no field the Kubernetes types do not know (TypeScript's excess-property check)", async () => {
    const folder = mkdtempSync(join(tmpdir(), "lock-k8s-types-"));
    folders.push(folder);
    symlinkSync(join(REPO_ROOT, "release", "node_modules"), join(folder, "node_modules"));
    const source = documents
      .map((document, i) => {
        const { type, module } = modelOf(document);
        return `import type { ${type} } from "${module}";\nexport const m${i}: ${type} = ${JSON.stringify(document)};`;
      })
      .join("\n");
    writeFileSync(join(folder, "manifests.ts"), source);
    const tsc = join(REPO_ROOT, "node_modules", ".bin", "tsc");
    const options = ["--noEmit", "--strict", "--module", "nodenext", "--skipLibCheck", "manifests.ts"];
    await expect(run(tsc, options, { cwd: folder })).resolves.toBeDefined();
    writeFileSync(
      join(folder, "manifests.ts"),
      source.replace('"publishNotReadyAddresses"', '"publishNotReadyAdresses"'),
    );
    await expect(run(tsc, options, { cwd: folder })).rejects.toMatchObject({
      stdout: expect.stringContaining("publishNotReadyAdresses"),
    });
  });

  it("make one StatefulSet behind a headless Service that publishes unready pods, a PDB of one, /readyz readiness", () => {
    const service = byKind("Service");
    const set = byKind("StatefulSet");
    const budget = byKind("PodDisruptionBudget");
    expect(service.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true });
    expect(set.spec.serviceName).toBe(service.metadata.name);
    const labels = set.spec.template.metadata.labels;
    expect(labels).toMatchObject(service.spec.selector);
    expect(labels).toMatchObject(budget.spec.selector.matchLabels);
    expect(budget.spec.maxUnavailable).toBe(1);
    const [container] = set.spec.template.spec.containers;
    expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "admin" });
    expect(container.ports).toContainEqual({ name: "admin", containerPort: 7421 });
    // The tokens are files from the Secret, never values in the manifest.
    const tokensMount = container.volumeMounts.find(
      (mount: { name: string }) => mount.name === "tokens",
    ).mountPath;
    const secret = set.spec.template.spec.volumes.find(
      (volume: { name: string }) => volume.name === "tokens",
    ).secret;
    expect(secret.secretName).toBe("lockd-tokens");
    for (const name of ["LOCKD_PEER_TOKEN_FILE", "LOCKD_ADMIN_TOKEN_FILE", "LOCKD_AUTH_TOKEN_FILE"]) {
      const variable = container.env.find((entry: { name: string }) => entry.name === name);
      expect(variable?.value, name).toMatch(new RegExp(`^${tokensMount}/`));
    }
    expect(JSON.stringify(container.env)).not.toMatch(/"LOCKD_(AUTH|PEER|ADMIN)_TOKEN"/);
    // The grace period covers the hook's bound, which covers lockd's stop (handoff 2 s + grace 2 s).
    const hookBoundMs = Number(
      /Date\.now\(\) \+ (\d+)/.exec(container.lifecycle.preStop.exec.command[2])![1],
    );
    expect(set.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(hookBoundMs);
    expect(hookBoundMs).toBeGreaterThan(4_000);
  });

  it("give each pod an environment lockd accepts: its own address among the peers, the tokens read", async () => {
    const set = byKind("StatefulSet");
    const [container] = set.spec.template.spec.containers;
    const { parseConfig } = await import(join(REPO_ROOT, "apps", "lockd", "dist", "config.js"));
    const tokens: Record<string, string> = {};
    for (let ordinal = 0; ordinal < set.spec.replicas; ordinal++) {
      const env = podEnvironment(container.env, { POD_NAME: `lockd-${ordinal}`, POD_NAMESPACE: "locks" });
      const files: Record<string, Buffer> = {};
      for (const name of ["auth-token", "peer-token", "admin-token"]) {
        tokens[name] ??= `${name}-${"x".repeat(32)}`;
        files[`/etc/lockd/tokens/${name}`] = Buffer.from(tokens[name]!);
      }
      const { config } = parseConfig([], env, (path: string) => files[path]!);
      expect(config.advertise).toBe(`lockd-${ordinal}.lockd.locks.svc.cluster.local:7420`);
      expect(config.peers).toEqual([0, 1, 2].map((i) => `lockd-${i}.lockd.locks.svc.cluster.local:7420`));
      expect(config.peerToken).toBe(tokens["peer-token"]);
      expect(config.adminToken).toBe(tokens["admin-token"]);
      expect(config.dataDir).toBe(
        container.volumeMounts.find((mount: { name: string }) => mount.name === "data").mountPath,
      );
    }
  });

  it("stop a real active with the preStop hook: it hands its role over, exits 0, and the hook returns after it", async () => {
    await using cluster = await LockdCluster.start({ nodes: 2 });
    // Since start: both may have happened before these lines run.
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await cluster.nodes[1]!.waitForFollowing(cluster.advertised(0), { since: 0 });
    const [, , script] =
      byKind("StatefulSet").spec.template.spec.containers[0].lifecycle.preStop.exec.command;
    const order: string[] = [];
    const exited = cluster.nodes[0]!.exited().then((exit) => {
      order.push("lockd exited");
      return exit;
    });
    const since = cluster.nodes[1]!.logs.length;
    // The hook as the container runs it (`node -e SCRIPT 1`), with the active's pid for PID 1.
    await run(process.execPath, ["-e", script, String(cluster.nodes[0]!.pid)]);
    order.push("hook returned");
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(order).toEqual(["lockd exited", "hook returned"]);
    await cluster.nodes[1]!.waitForServing({ since });
  });
});

/** A container's env as Kubernetes expands it: `$(NAME)` from the variables defined before it. */
function podEnvironment(
  entries: Array<{ name: string; value?: string }>,
  fields: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { name, value } of entries) {
    env[name] =
      value === undefined ? fields[name]! : value.replace(/\$\((\w+)\)/g, (_, ref: string) => env[ref]!);
  }
  return env;
}
