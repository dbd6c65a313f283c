import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { PackedPackage } from "./pack.js";

/**
 * A read-only npm registry on loopback that knows only the packed `@lock/*` tarballs: what the
 * registry will serve once they are published. npm is pointed at it for the `@lock` scope alone
 * (`--@lock:registry=<url>`), so `npm install -g lockd.tgz` resolves lockd's `@lock/server@x.y.z`
 * here and fastify, pino… from the usual registry, as a user's install would.
 */
export class LocalRegistry {
  readonly url: string;
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }

  static async start(packed: readonly PackedPackage[]): Promise<LocalRegistry> {
    const scoped = packed.filter(({ name }) => name.startsWith("@lock/"));
    const tarballs = new Map<string, string>();
    const documents = new Map<string, object>();
    const server = createServer((request, response) => {
      const path = decodeURIComponent(new URL(request.url ?? "/", "http://registry").pathname.slice(1));
      const tarball = tarballs.get(path);
      const document = documents.get(path);
      if (tarball !== undefined) {
        response.writeHead(200, { "content-type": "application/octet-stream" }).end(readFileSync(tarball));
      } else if (document !== undefined) {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(document));
      } else {
        response.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const registry = new LocalRegistry(server);
    for (const { name, tarball } of scoped) {
      const manifest = JSON.parse(
        execFileSync("tar", ["xzf", tarball, "-O", "package/package.json"], { encoding: "utf8" }),
      );
      const file = `${name}/-/${name.split("/")[1]}-${manifest.version}.tgz`;
      tarballs.set(file, tarball);
      const integrity = `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`;
      documents.set(name, {
        name,
        "dist-tags": { latest: manifest.version },
        versions: {
          [manifest.version]: {
            ...manifest,
            _id: `${name}@${manifest.version}`,
            dist: { tarball: `${registry.url}${file}`, integrity },
          },
        },
      });
    }
    return registry;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
