// Dependency rules for the server package (`pnpm run lint:deps`, run by CI after `lint:ci`).
// The server's layers, lowest first: engine/ (the pure lock table), epoch/ and store/ (token
// epochs), the node (node.ts and the other files at the top of src/: the façade over one node's
// engine, epochs and timers), session/ and io/ (a client session's verbs, socket helpers),
// cluster/ (replication, roles; cluster/peer/ at its bottom: the peer handshake and the sessions
// of peer links), net/ (sockets: composes the cluster and the sessions). An import may point down
// or sideways, never up; net/ uses the cluster only through cluster/index.ts, and nothing outside
// the simulator uses cluster/sim/. Tests may reach anywhere.
const TESTS = "\\.test(\\.data)?\\.ts$";
const SERVER = "^packages/server/src/";
/** The files at the top of src/ (the node and what it shares), not the package's index. */
const TOP = `${SERVER}(?!index\\.ts$)[^/]+\\.ts$`;

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
      name: "node-below-sessions-and-cluster",
      severity: "error",
      comment: "The node (src/*.ts) is what sessions and the cluster drive: it knows neither.",
      from: { path: TOP, pathNot: TESTS },
      to: { path: `${SERVER}(session|io|cluster|net)/` },
    },
    {
      name: "epoch-store-below-the-node",
      severity: "error",
      comment: "Token epochs and their store are the node's parts, below it.",
      from: { path: `${SERVER}(epoch|store)/`, pathNot: TESTS },
      to: { path: [TOP, `${SERVER}(session|io)/`] },
    },
    {
      name: "session-io-below-cluster",
      severity: "error",
      comment: "A client session's verbs and the socket helpers know nothing of the cluster or of net/.",
      from: { path: `${SERVER}(session|io)/`, pathNot: TESTS },
      to: { path: `${SERVER}(cluster|net)/` },
    },
    {
      name: "net-uses-cluster-through-its-index",
      severity: "error",
      comment:
        "net/ composes the cluster through cluster/index.ts (the factory, PeerListener, links), never its parts.",
      from: { path: `${SERVER}net/`, pathNot: TESTS },
      to: { path: `${SERVER}cluster/`, pathNot: `${SERVER}cluster/index\\.ts$` },
    },
    {
      name: "peer-at-the-bottom-of-cluster",
      severity: "error",
      comment:
        "cluster/peer/ (handshake, peer link sessions, PeerListener) is pure protocol: of the cluster it knows only link.ts.",
      from: { path: `${SERVER}cluster/peer/`, pathNot: TESTS },
      to: { path: `${SERVER}cluster/`, pathNot: [`${SERVER}cluster/peer/`, `${SERVER}cluster/link\\.ts$`] },
    },
    {
      name: "simulator-not-in-production",
      severity: "error",
      comment: "The simulator (cluster/sim/) composes the cluster for tests; nothing else imports it.",
      from: { path: SERVER, pathNot: [`${SERVER}cluster/sim/`, TESTS] },
      to: { path: `${SERVER}cluster/sim/` },
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
