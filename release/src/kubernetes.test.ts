import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { LockdCluster, REPO_ROOT } from "@lock/testkit";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Service } from "kubernetes-models/v1/Service";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * deploy/kubernetes/lockd.yaml and the two-cluster example in deploy/kubernetes/multi-cluster/
 * against the Kubernetes object schemas (kubernetes-models: validators generated from Kubernetes'
 * OpenAPI schemas, and their TypeScript types, whose excess-property check catches a misspelt field
 * the schemas would let through), then against lockd itself: each pod's environment through
 * lockd's own config parser (the slot map ConfigMap's file included), and the preStop hook stopping
 * a real active, which hands its role over.
 */
const run = promisify(execFile);
const KUBERNETES = join(REPO_ROOT, "deploy", "kubernetes");
const load = (path: string) =>
  parseAllDocuments(readFileSync(join(KUBERNETES, path), "utf8")).map((document) => document.toJS());
/** Every manifest file, with the kinds of its objects in order. */
const MANIFESTS = {
  "lockd.yaml": ["Service", "StatefulSet", "PodDisruptionBudget"],
  "multi-cluster/slot-map.yaml": ["ConfigMap"],
  "multi-cluster/lockd-east.yaml": ["Service", "StatefulSet", "PodDisruptionBudget"],
  "multi-cluster/lockd-west.yaml": ["Service", "StatefulSet", "PodDisruptionBudget"],
} as const;
const loaded = Object.fromEntries(Object.keys(MANIFESTS).map((path) => [path, load(path)]));
const documents = loaded["lockd.yaml"]!;
const MODELS = {
  "v1/Service": { model: Service, type: "IService", module: "kubernetes-models/v1/Service" },
  "v1/ConfigMap": { model: ConfigMap, type: "IConfigMap", module: "kubernetes-models/v1/ConfigMap" },
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
/** An object of a manifest, as parsed: its shape is the schemas' and the tests' business. */
type Manifest = ReturnType<typeof load>[number];
const kindIn = (manifests: Manifest[], kind: string) => manifests.find((document) => document.kind === kind);
const byKind = (kind: string) => kindIn(documents, kind);

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe("the Kubernetes manifests", () => {
  it("validate against the Kubernetes object schemas", () => {
    for (const [path, kinds] of Object.entries(MANIFESTS)) {
      expect(
        loaded[path]!.map((document) => document.kind),
        path,
      ).toEqual(kinds);
      for (const document of loaded[path]!) {
        const { model: Model } = modelOf(document);
        expect(() => new Model(document).validate(), `${path}: ${document.kind}`).not.toThrow();
      }
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
    // Every object of every file, each type imported once.
    const all = Object.values(loaded).flat();
    const imports = new Set(
      all.map((document) => {
        const { type, module } = modelOf(document);
        return `import type { ${type} } from "${module}";`;
      }),
    );
    const source = [
      ...imports,
      ...all.map(
        (document, i) => `export const m${i}: ${modelOf(document).type} = ${JSON.stringify(document)};`,
      ),
    ].join("\n");
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
    const hookBoundMs = preStopBoundMs(container);
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

describe("the two-cluster example (deploy/kubernetes/multi-cluster/)", () => {
  const slotMapConfig = loaded["multi-cluster/slot-map.yaml"]![0];
  const CLUSTERS = {
    east: loaded["multi-cluster/lockd-east.yaml"]!,
    west: loaded["multi-cluster/lockd-west.yaml"]!,
  };
  const NAMESPACE: string = slotMapConfig.metadata.namespace;
  const named = (entries: Manifest[], name: string): Manifest => entries.find((entry) => entry.name === name);
  const slotMapText = (): string => {
    expect(Object.keys(slotMapConfig.data)).toEqual(["slot-map.json"]);
    return slotMapConfig.data["slot-map.json"];
  };
  const protocol = () => import(join(REPO_ROOT, "packages", "protocol", "dist", "index.js"));

  it("has a slot map lockd accepts, every slot given once: 0-8191 to east, 8192-16383 to west", async () => {
    const { SlotMap } = await protocol();
    const map = SlotMap.fromDocument(1n, slotMapText());
    expect(map.ranges).toEqual([
      { from: 0, to: 8191, cluster: "east" },
      { from: 8192, to: 16383, cluster: "west" },
    ]);
    expect([...map.clusters.keys()]).toEqual(Object.keys(CLUSTERS));
    // The check can fail: a map that leaves a slot to nobody is refused.
    const gap = JSON.parse(slotMapText());
    gap.ranges[1].from = 8193;
    expect(() => SlotMap.fromDocument(1n, JSON.stringify(gap))).toThrow(/8192-8192 belong to no cluster/);
  });

  it("names in the map every pod of each cluster as its StatefulSet and headless Service make them, under its LOCKD_CLUSTER_NAME", async () => {
    const { SlotMap } = await protocol();
    const map = SlotMap.fromDocument(1n, slotMapText());
    for (const [name, manifests] of Object.entries(CLUSTERS)) {
      for (const document of manifests) expect(document.metadata.namespace, name).toBe(NAMESPACE);
      const set = kindIn(manifests, "StatefulSet");
      const service = kindIn(manifests, "Service");
      expect(set.spec.serviceName).toBe(service.metadata.name);
      const container = set.spec.template.spec.containers[0];
      expect(named(container.env, "LOCKD_CLUSTER_NAME").value).toBe(name);
      const port = named(service.spec.ports, "client").port;
      const pods = Array.from(
        { length: set.spec.replicas },
        (_, ordinal) =>
          `${set.metadata.name}-${ordinal}.${service.metadata.name}.${NAMESPACE}.svc.cluster.local:${port}`,
      );
      expect(map.clusters.get(name), name).toEqual(pods);
      // The same addresses, in the same order, as the cluster's peers.
      const env = podEnvironment(container.env, { POD_NAME: "any", POD_NAMESPACE: NAMESPACE });
      expect(env.LOCKD_PEERS!.split(","), name).toEqual(pods);
      // The map's file is the ConfigMap's, mounted where LOCKD_SLOT_MAP looks.
      const volume = named(set.spec.template.spec.volumes, "slot-map");
      expect(volume.configMap.name).toBe(slotMapConfig.metadata.name);
      const mount = named(container.volumeMounts, "slot-map");
      expect(named(container.env, "LOCKD_SLOT_MAP").value).toBe(`${mount.mountPath}/slot-map.json`);
      // Both clusters read the one coordinator URL.
      expect(named(container.env, "LOCKD_COORDINATOR").valueFrom).toEqual({
        secretKeyRef: { name: "lockd-coordinator", key: "url" },
      });
    }
    // The check can fail: a cluster of four pods would not match the map's three addresses.
    const four = Array.from(
      { length: 4 },
      (_, i) => `lockd-east-${i}.lockd-east.${NAMESPACE}.svc.cluster.local:7420`,
    );
    expect(map.clusters.get("east")).not.toEqual(four);
  });

  it("keeps each cluster's Service, budget, StatefulSet and anti-affinity to its own pods", () => {
    const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([key, value]) => labels[key] === value);
    for (const [name, manifests] of Object.entries(CLUSTERS)) {
      const selectors = [
        kindIn(manifests, "Service").spec.selector,
        kindIn(manifests, "PodDisruptionBudget").spec.selector.matchLabels,
        kindIn(manifests, "StatefulSet").spec.selector.matchLabels,
        kindIn(manifests, "StatefulSet").spec.template.spec.affinity.podAntiAffinity
          .requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels,
      ];
      for (const [other, otherManifests] of Object.entries(CLUSTERS)) {
        const labels = kindIn(otherManifests, "StatefulSet").spec.template.metadata.labels;
        for (const selector of selectors)
          expect(matches(selector, labels), `${name}'s ${JSON.stringify(selector)} on ${other}'s pods`).toBe(
            name === other,
          );
      }
    }
  });

  it("is lockd.yaml's cluster but for names, coordinator and slot map; lockd-west.yaml is lockd-east.yaml with east → west", () => {
    const rename = (value: unknown): unknown =>
      typeof value === "string"
        ? value.replace(/\beast\b/g, "west")
        : Array.isArray(value)
          ? value.map(rename)
          : value !== null && typeof value === "object"
            ? Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, rename(entry)]))
            : value;
    expect(rename(CLUSTERS.east)).toEqual(CLUSTERS.west);
    // What lockd.yaml decides for its one cluster holds for each: the pod, probes, preStop, grace.
    const single = byKind("StatefulSet").spec;
    const east = kindIn(CLUSTERS.east, "StatefulSet").spec;
    for (const field of ["replicas", "podManagementPolicy", "updateStrategy", "volumeClaimTemplates"])
      expect(east[field], field).toEqual(single[field]);
    const pod = ["terminationGracePeriodSeconds", "enableServiceLinks", "automountServiceAccountToken"];
    for (const field of [...pod, "securityContext"])
      expect(east.template.spec[field], field).toEqual(single.template.spec[field]);
    expect(named(east.template.spec.volumes, "tokens")).toEqual(
      named(single.template.spec.volumes, "tokens"),
    );
    const [container] = east.template.spec.containers;
    const [singleContainer] = single.template.spec.containers;
    const fields = [
      "image",
      "ports",
      "readinessProbe",
      "livenessProbe",
      "lifecycle",
      "resources",
      "securityContext",
    ];
    for (const field of fields) expect(container[field], field).toEqual(singleContainer[field]);
    // Every variable of lockd.yaml is set (its names adapted), plus the coordinator's.
    expect(container.env.map((entry: { name: string }) => entry.name)).toEqual(
      expect.arrayContaining(singleContainer.env.map((entry: { name: string }) => entry.name)),
    );
    expect(kindIn(CLUSTERS.east, "PodDisruptionBudget").spec.maxUnavailable).toBe(1);
    expect(kindIn(CLUSTERS.east, "Service").spec).toMatchObject({
      clusterIP: "None",
      publishNotReadyAddresses: true,
    });
    expect(east.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      preStopBoundMs(container),
    );
    // The check can fail: one letter of the preStop script changed in west is seen.
    const drifted = structuredClone(CLUSTERS.west);
    const west = kindIn(drifted, "StatefulSet").spec.template.spec.containers[0];
    west.lifecycle.preStop.exec.command[2] = west.lifecycle.preStop.exec.command[2].replace("25000", "35000");
    expect(rename(CLUSTERS.east)).not.toEqual(drifted);
  });

  it("gives each pod an environment lockd accepts: the coordinator, its cluster's name, the map from the ConfigMap's file", async () => {
    const { parseConfig } = await import(join(REPO_ROOT, "apps", "lockd", "dist", "config.js"));
    const files: Record<string, Buffer> = {};
    for (const name of ["auth-token", "peer-token", "admin-token"])
      files[`/etc/lockd/tokens/${name}`] = Buffer.from(`${name}-${"x".repeat(32)}`);
    // Where LOCKD_SLOT_MAP points: the ConfigMap's file, as the pod mounts it (checked above).
    const mapFile = "/etc/lockd/slot-map/slot-map.json";
    files[mapFile] = Buffer.from(slotMapText());
    const coordinator = "etcd://etcd-0.etcd.etcd.svc.cluster.local:2379/lockd";
    const parse = (env: Record<string, string>) => {
      expect(env.LOCKD_SLOT_MAP).toBe(mapFile);
      return parseConfig([], env, (path: string) => files[path]!).config;
    };
    for (const [name, manifests] of Object.entries(CLUSTERS)) {
      const set = kindIn(manifests, "StatefulSet");
      const container = set.spec.template.spec.containers[0];
      for (let ordinal = 0; ordinal < set.spec.replicas; ordinal++) {
        const env = podEnvironment(container.env, {
          POD_NAME: `${set.metadata.name}-${ordinal}`,
          POD_NAMESPACE: NAMESPACE,
          LOCKD_COORDINATOR: coordinator,
        });
        const config = parse(env);
        expect(config.coordinator).toMatchObject({ url: coordinator, clusterName: name, leaseMs: 2000 });
        expect(config.coordinator.slotMap.clusters.get(name)).toContain(config.advertise);
        expect(config.peers).toContain(config.advertise);
        // The check can fail: a cluster name the map does not know is refused.
        expect(() => parse({ ...env, LOCKD_CLUSTER_NAME: "north" })).toThrow(/does not name this cluster/);
      }
    }
  });
});

/** The preStop hook's bound on the wait for lockd's exit, from its script. */
function preStopBoundMs(container: { lifecycle: { preStop: { exec: { command: string[] } } } }): number {
  return Number(/Date\.now\(\) \+ (\d+)/.exec(container.lifecycle.preStop.exec.command[2]!)![1]);
}

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
