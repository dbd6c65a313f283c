// Dependency rules for the server package (`pnpm run lint:deps`, run by CI after `lint:ci`).
// The server's layers, lowest first: engine/ (the pure lock table), epoch/ and store/ (token
// epochs), session/ and io/ (a client session's verbs, socket helpers), cluster/ (replication,
// roles, the peer handshake in cluster/peer/), net/ (sockets: composes the cluster and the
// sessions). An import may point down or sideways, never up. Tests may reach anywhere.
const TESTS = "\\.test(\\.data)?\\.ts$";
const SERVER = "^packages/server/src/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A cycle makes two modules one: neither can be read, tested or moved alone.",
      from: { pathNot: TESTS },
      to: { circular: true },
    },
    {
      name: "engine-is-pure",
      severity: "error",
      comment: "The engine is the pure lock table: it imports only itself and packages.",
      from: { path: `${SERVER}engine/`, pathNot: TESTS },
      to: { path: SERVER, pathNot: `${SERVER}engine/` },
    },
    {
      name: "cluster-not-net",
      severity: "error",
      comment: "net/ composes the cluster; the cluster (and its simulator) runs without sockets of net/.",
      from: { path: `${SERVER}cluster/`, pathNot: TESTS },
      to: { path: `${SERVER}net/` },
    },
    {
      name: "epoch-store-below-cluster-and-net",
      severity: "error",
      comment: "Token epochs and their store know nothing of the cluster or of sockets.",
      from: { path: `${SERVER}(epoch|store)/`, pathNot: TESTS },
      to: { path: `${SERVER}(cluster|net)/` },
    },
    {
      name: "net-is-the-top",
      severity: "error",
      comment: "Only net/ itself and the package's index import net/: it is the composition root.",
      from: { path: SERVER, pathNot: [`${SERVER}net/`, `${SERVER}index\\.ts$`, TESTS] },
      to: { path: `${SERVER}net/` },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: {
      // Workspace packages resolve to their TypeScript sources, as vitest does.
      conditionNames: ["@lock/source", "import", "node", "default"],
      exportsFields: ["exports"],
      extensions: [".ts", ".js"],
    },
  },
};
