/** A request id of @lock/client: a per-client prefix, a counter (base 36), a random secret. */
const ID = /(?:^| )(k[0-9a-f]{16})\.[0-9a-z]+\.[0-9a-f]{16}(?: |$)/m;

/**
 * Names for the clients' request ids in the history and the log: `c1.7` for client c1's seventh id.
 * The ids themselves differ between two runs of one seed (their prefix and secret are random, and
 * unguessable on purpose), which would make a replayed failure read differently. Each client's
 * prefix is learnt from the first id its socket writes.
 */
export class RequestLabels {
  readonly #clients = new Map<string, string>();
  readonly #known = new Set<string>();

  /** A hook for the sockets of `client`: it reads writes until it has found an id. */
  watch(client: string): (data: string) => void {
    return (data) => {
      if (this.#known.has(client)) return;
      const prefix = ID.exec(data)?.[1];
      if (prefix === undefined) return;
      this.#known.add(client);
      this.#clients.set(prefix, client);
    };
  }

  /** The id as `client.counter`, or as it is if it is not a known client's. */
  label(id: string): string;
  label(id: string | undefined): string | undefined;
  label(id: string | undefined): string | undefined {
    if (id === undefined) return undefined;
    const [prefix, counter] = id.split(".");
    const client = this.#clients.get(prefix ?? "");
    return client === undefined || counter === undefined ? id : `${client}.${Number.parseInt(counter, 36)}`;
  }
}
