import type { Server as TlsServer } from "node:tls";
import type { LockServer } from "@lock/server";
import {
  checkTlsMaterial,
  describeCertificate,
  hasTlsFiles,
  readTlsMaterial,
  type TlsPaths,
} from "./tls-files.js";

export interface ReloadLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** What a reload swaps the certificates of: the client port (and the peer links it dials), the admin server. */
export interface ReloadTargets {
  readonly server: LockServer;
  /** The admin server's HTTPS server, when it serves HTTPS. */
  readonly admin: TlsServer | undefined;
}

/**
 * SIGHUP: reads lockd's TLS files again and serves them to connections from now on. Connections
 * already open keep theirs, so no client, peer link or held lock is dropped. All or nothing: a file
 * that cannot be read or used (a renewal caught half-written, a key that is not the certificate's)
 * is logged with the file's name and every certificate in use is kept. Never throws: a bad file must
 * not stop a lock service.
 */
export function reloadTls(
  paths: TlsPaths,
  readFile: (path: string) => Buffer,
  targets: ReloadTargets,
  log: ReloadLog,
): void {
  if (!hasTlsFiles(paths)) {
    log.warn(
      { signal: "SIGHUP" },
      "SIGHUP: no TLS files to read again (lockd reloads only its TLS files; restart it to change a flag, SIGTERM stops it)",
    );
    return;
  }
  try {
    const material = readTlsMaterial(paths, readFile);
    checkTlsMaterial(paths, material);
    // Every check is done before the first swap: either both servers change or neither does.
    if (material.served) {
      targets.server.reloadTls(material.served, material.ca ? { ca: material.ca } : {});
    }
    if (material.admin && targets.admin) targets.admin.setSecureContext({ ...material.admin });
    log.info(
      {
        signal: "SIGHUP",
        cert: material.served ? describeCertificate(material.served.cert) : null,
        adminCert: material.admin && targets.admin ? describeCertificate(material.admin.cert) : null,
      },
      "TLS files reloaded: new connections get them, open ones keep theirs",
    );
  } catch (error) {
    log.error(
      { signal: "SIGHUP", error: (error as Error).message },
      "TLS reload failed: the certificates in use are kept",
    );
  }
}
