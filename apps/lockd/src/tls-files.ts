import { createPrivateKey, X509Certificate } from "node:crypto";
import { createSecureContext } from "node:tls";
import { ConfigError } from "./address.js";
import { readSecretFile, type Setting } from "./secrets.js";

/** A certificate and its private key, as PEM. */
export interface KeyPair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/**
 * Where lockd's TLS files are (each with the flag or variable that named it): read at start, and
 * again on every SIGHUP, so a certificate can be renewed without a restart.
 */
export interface TlsPaths {
  readonly cert: Setting | undefined;
  readonly key: Setting | undefined;
  readonly ca: Setting | undefined;
  readonly adminCert: Setting | undefined;
  readonly adminKey: Setting | undefined;
}

/** What the TLS files hold. */
export interface TlsMaterial {
  /** Served on the client port (to clients and to peer links that dial it). */
  readonly served: KeyPair | undefined;
  /** What peers' certificates must chain to, when this node dials them. */
  readonly ca: Buffer | undefined;
  /** Served by the admin server (HTTPS). */
  readonly admin: KeyPair | undefined;
}

/** True when lockd was given any TLS file: a SIGHUP has something to read again. */
export function hasTlsFiles(paths: TlsPaths): boolean {
  return Object.values(paths).some((setting) => setting !== undefined);
}

/** Reads every TLS file named (pairs must come together); the contents are not checked here. */
export function readTlsMaterial(paths: TlsPaths, readFile: (path: string) => Buffer): TlsMaterial {
  const pair = (cert: Setting | undefined, key: Setting | undefined, names: string): KeyPair | undefined => {
    if ((cert === undefined) !== (key === undefined)) throw new ConfigError(`${names} go together`);
    if (cert === undefined || key === undefined) return undefined;
    return { cert: readSecretFile(cert.text, readFile), key: readSecretFile(key.text, readFile) };
  };
  return {
    served: pair(paths.cert, paths.key, "--tls-cert and --tls-key"),
    ca: paths.ca === undefined ? undefined : readSecretFile(paths.ca.text, readFile),
    admin: pair(paths.adminCert, paths.adminKey, "--admin-tls-cert and --admin-tls-key"),
  };
}

/**
 * Checks that the material can be used as it is (parses, and each key belongs to its certificate),
 * with an error naming the file at fault: a reload must refuse a half-written or mismatched file
 * before anything is swapped, and say which one it was.
 */
export function checkTlsMaterial(paths: TlsPaths, material: TlsMaterial): void {
  if (material.served) checkPair(material.served, paths.cert!, paths.key!);
  if (material.admin) checkPair(material.admin, paths.adminCert!, paths.adminKey!);
  if (material.ca) {
    try {
      createSecureContext({ ca: material.ca });
    } catch (error) {
      throw new ConfigError(`${named(paths.ca!)}: not a PEM CA bundle (${(error as Error).message})`);
    }
  }
}

/** What a log line says about a certificate: enough to tell which one is served, nothing secret. */
export function describeCertificate(cert: Buffer): {
  subject: string;
  validTo: string;
  fingerprint256: string;
} {
  const x509 = new X509Certificate(cert);
  return { subject: x509.subject, validTo: x509.validTo, fingerprint256: x509.fingerprint256 };
}

function checkPair(pair: KeyPair, certSetting: Setting, keySetting: Setting): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.cert);
  } catch (error) {
    throw new ConfigError(`${named(certSetting)}: not a PEM certificate (${(error as Error).message})`);
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pair.key);
  } catch {
    // The key's parser may quote what it read: a private key's content never goes into a log.
    throw new ConfigError(`${named(keySetting)}: not a PEM private key`);
  }
  if (!cert.checkPrivateKey(key)) {
    throw new ConfigError(`${named(keySetting)}: not the private key of ${named(certSetting)}`);
  }
  try {
    createSecureContext({ cert: pair.cert, key: pair.key });
  } catch (error) {
    throw new ConfigError(`${named(certSetting)}: cannot be served (${(error as Error).message})`);
  }
}

function named(setting: Setting): string {
  return `${setting.origin} ${setting.text}`;
}
