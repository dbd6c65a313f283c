import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { LineClient, LockdCluster, REPO_ROOT } from "@lock/testkit";
import { CHROMIUM_PATH, hasChromium, launchChromium } from "./browser.js";

/**
 * `pnpm screenshot`: the status page's pictures in docs/ from a live 3-node cluster under some
 * load: the active's page 1280 and 420 px wide, and a standby's page (`status-page-standby.png`).
 * Node 0 is the active, node 2 is killed so the picture shows all three states, a few keys have
 * queues (most contended), and a load of acquire+release cycles runs for `SCREENSHOT_LOAD_S`
 * seconds (default 90) so the chart has a shape. `SCREENSHOT_NAME` changes the files' stem
 * (default `status-page`). Not a test; run it by hand after changing the page.
 */
const LOAD_SECONDS = Number(process.env.SCREENSHOT_LOAD_S ?? 90);
const STEM = process.env.SCREENSHOT_NAME ?? "status-page";
const SHOTS = [
  { node: 0, width: 1280, file: `${STEM}-1280.png` },
  { node: 0, width: 420, file: `${STEM}-420.png` },
  { node: 1, width: 1280, file: `${STEM}-standby.png` },
] as const;

async function cycles(client: LineClient, prefix: string, until: number, pace: () => number): Promise<void> {
  let n = 0;
  while (Date.now() < until) {
    const key = `${prefix}:${n++ % 50}`;
    const token = (await client.request(`A ${key} 30 0`)).split(" ")[2];
    await client.request(`R ${key} ${token}`);
    const pause = pace();
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Holds `key` from one connection and queues `waiters` acquires behind it from others. */
async function contend(port: number, key: string, waiters: number, clients: LineClient[]): Promise<void> {
  const holder = await LineClient.connect(port);
  clients.push(holder);
  await holder.request(`A ${key} 600 0`);
  for (let i = 0; i < waiters; i++) {
    const waiter = await LineClient.connect(port);
    clients.push(waiter);
    waiter.send(`A ${key} 30 0`);
  }
}

/** A handful of keys handed from one waiter to the next: handoffs/s in the chart. */
async function handoffs(port: number, key: string, until: number, clients: LineClient[]): Promise<void> {
  const runners = await Promise.all([0, 1, 2].map(() => LineClient.connect(port)));
  clients.push(...runners);
  await Promise.all(
    runners.map(async (client) => {
      while (Date.now() < until) {
        const token = (await client.request(`A ${key} 30 0`)).split(" ")[2];
        await new Promise((resolve) => setTimeout(resolve, 2));
        await client.request(`R ${key} ${token}`);
      }
    }),
  );
}

async function main(): Promise<void> {
  if (!hasChromium()) throw new Error(`${CHROMIUM_PATH} is absent: apt-get install -y chromium`);
  const cluster = await LockdCluster.start({ nodes: 3, args: ["--admin", "127.0.0.1:0"] });
  const clients: LineClient[] = [];
  const browser = await launchChromium();
  try {
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await Promise.all(
      cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
    );
    const port = cluster.nodes[0]!.port;
    await contend(port, "orders:nightly-invoice-run", 7, clients);
    await contend(port, "billing:ledger-close", 4, clients);
    await contend(port, "search:reindex", 2, clients);
    const holder = await LineClient.connect(port);
    clients.push(holder);
    holder.send(Array.from({ length: 1200 }, (_, i) => `A session:${i} 600 0`).join("\n"));
    for (let i = 0; i < 1200; i++) await holder.next();

    const started = Date.now();
    const until = started + LOAD_SECONDS * 1000;
    const load = await Promise.all([0, 1, 2, 3].map(() => LineClient.connect(port)));
    clients.push(...load);
    // A load that rises and falls, so the chart is not a flat line.
    const pace = () =>
      Math.max(0, Math.round(3 * Math.cos(((Date.now() - started) / 1000 / LOAD_SECONDS) * 2 * Math.PI)));
    const running = [
      ...load.map((client, i) => cycles(client, `jobs:${i}`, until, pace)),
      handoffs(port, "cron:daily-report", until, clients),
    ];
    // Node 2 dies half way: the page shows it DOWN, and "recent changes" says when.
    await new Promise((resolve) => setTimeout(resolve, (LOAD_SECONDS * 1000) / 2));
    await cluster.nodes[2]!.kill("SIGKILL");
    // The picture is taken while the load still runs, a few seconds before it ends.
    await new Promise((resolve) => setTimeout(resolve, (LOAD_SECONDS * 1000) / 2 - 5000));
    mkdirSync(join(REPO_ROOT, "docs"), { recursive: true });
    for (const shot of SHOTS) {
      const page = await browser.newPage({
        viewport: { width: shot.width, height: 1000 },
        deviceScaleFactor: 1,
      });
      await page.goto(`http://127.0.0.1:${cluster.nodes[shot.node]!.adminPort}/`);
      await page.waitForSelector(`#nodes tr[data-node="${cluster.advertised(2)}"][data-state="down"]`);
      // A standby's replica has holders but no queues: only the active lists contended keys.
      if (shot.node === 0) await page.waitForSelector("#contended tbody tr");
      const output = join(REPO_ROOT, "docs", shot.file);
      await page.screenshot({ path: output, fullPage: true });
      await page.close();
      console.log(`wrote ${output}`);
    }
    await Promise.all(running);
  } finally {
    for (const client of clients) client.close();
    await browser.close();
    await cluster.dispose();
  }
}

await main();
