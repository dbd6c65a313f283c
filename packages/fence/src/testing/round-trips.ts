import type pg from "pg";

/**
 * A pool as a PostgresStore sees it, whose connections record when each query is sent (query() called)
 * and when its reply is in (its promise settled). `roundTrips()` counts the batches of sends: queries
 * sent together, before any of their replies, share one round trip; a query sent after a reply waited
 * for it. Only for tests: it swaps each checked-out client's query method while the store holds it.
 */
export function roundTripPool(pool: pg.Pool): {
  pool: pg.Pool;
  events: ("sent" | "replied")[];
  roundTrips(): number;
  reset(): void;
} {
  const events: ("sent" | "replied")[] = [];
  const recording = {
    query: pool.query.bind(pool),
    async connect() {
      const client = await pool.connect();
      const query = client.query;
      const release = client.release;
      client.query = ((...args: Parameters<typeof query>) => {
        events.push("sent");
        const reply = (query as (...a: unknown[]) => Promise<unknown>).apply(client, args);
        const settled = () => void events.push("replied");
        reply.then(settled, settled);
        return reply;
      }) as typeof query;
      client.release = (error?: Error | boolean) => {
        client.query = query;
        client.release = release;
        return release.call(client, error);
      };
      return client;
    },
  };
  return {
    pool: recording as unknown as pg.Pool,
    events,
    roundTrips: () => events.filter((event, i) => event === "sent" && events[i - 1] !== "sent").length,
    reset: () => void events.splice(0),
  };
}
