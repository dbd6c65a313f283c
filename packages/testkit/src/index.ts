export { buildLockd } from "./build.js";
export { FaultProxy } from "./fault-proxy.js";
export { LineClient } from "./line-client.js";
export type { LockdOptions, ReadyInfo } from "./lockd-process.js";
export { LockdProcess } from "./lockd-process.js";
export { LOCKD_MAIN, REPO_ROOT } from "./paths.js";
export type { TestCertificate } from "./tls.js";
export { selfSignedCertificate } from "./tls.js";
