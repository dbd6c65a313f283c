import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";
import { describeConformance } from "./suite.test.support.js";

// The second client: stdlib-only Python 3.11+, written from docs/protocol.md ("Writing a client").
const PYTHON = process.env.LOCK_CONFORMANCE_PYTHON ?? "python3";

describeConformance("python/lock_client.py", [
  PYTHON,
  join(REPO_ROOT, "packages", "conformance", "python", "adapter.py"),
]);
