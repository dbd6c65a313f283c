import http from "node:http";

/**
 * POSTs `body` as JSON to `path` and resolves with the parsed answer; rejects on a status other than
 * 200 with the server's message. For etcd's JSON gateway, without an etcd client library.
 */
export function postJson<T>(
  agent: http.Agent,
  endpoint: { readonly host: string; readonly port: number },
  path: string,
  body: unknown,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const request = http.request(
      {
        host: endpoint.host,
        port: endpoint.port,
        path,
        method: "POST",
        agent,
        headers: { "content-type": "application/json" },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", reject);
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (response.statusCode === 200) {
            try {
              resolve(JSON.parse(text) as T);
            } catch (error) {
              reject(new Error(`${path}: unreadable answer`, { cause: error }));
            }
          } else reject(new Error(`${path}: HTTP ${response.statusCode}: ${text.slice(0, 200)}`));
        });
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}
