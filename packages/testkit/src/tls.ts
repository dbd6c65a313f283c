import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestCertificate {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Files holding them, for lockd's --tls-cert / --tls-key. */
  readonly certPath: string;
  readonly keyPath: string;
  dispose(): void;
}

/**
 * A fresh self-signed certificate for 127.0.0.1 and localhost, made with the openssl CLI at test
 * time so that no private key is ever committed. Clients trust it by passing `ca: cert`.
 */
export function selfSignedCertificate(): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), "lockd-tls-"));
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout",
      keyPath,
      "-out",
      certPath,
    ],
    { stdio: "ignore" },
  );
  return {
    cert: readFileSync(certPath),
    key: readFileSync(keyPath),
    certPath,
    keyPath,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
