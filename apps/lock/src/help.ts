import { type CommandName, DEFAULTS, DURATION_FLAGS, FLAGS } from "./args.js";
import { EXIT_CODES } from "./exit-codes.js";

const USAGE = {
  run: "lock run KEY [--lease 30s] [--wait 10s | --no-wait] [--kill-after 5s] [--elect [--recampaign]] -- command [args...]",
  status: "lock status [--json] [--admin [https://]host:port,...]",
  locks: "lock locks --admin [https://]host:port,... [--prefix P] [--limit N] [--json]",
  slots:
    "lock slots --admin [https://]host:port,... [--json]  |  lock slots move FROM[-TO] --to CLUSTER [--wait D | --no-wait]",
} as const satisfies Record<CommandName, string>;

const ABOUT = {
  run:
    "Runs the command while holding the lock on KEY, with LOCK_KEY and LOCK_TOKEN (the fencing token) in\n" +
    "its environment; keeps the lease extended while it runs, passes SIGINT/SIGTERM/SIGHUP on to it,\n" +
    "releases the lock when it exits and exits with its status (128+n if signal n killed it).\n" +
    "A lost lock stops the command (SIGTERM, then SIGKILL after --kill-after) and exits 82.\n" +
    "With --elect, waits to be elected leader of KEY (as long as it takes, or --wait), runs the command\n" +
    "while leader with LOCK_TERM (= LOCK_TOKEN, the term) in its environment, stops it when leadership\n" +
    "is lost and exits 82, or with --recampaign stands for election again; when the command exits,\n" +
    "lock resigns so that a standby takes over at once.",
  status:
    "Shows every node: role, epoch, keys, waiters, connections, uptime (the I verb on each --servers\n" +
    "address); with --admin also liveness, replication lag and grants/s from each node's /status.\n" +
    "A node that does not answer is shown as DOWN. Exits 83 only when no node answered.",
  locks: "Lists held keys with their token, lease left, waiters and holder, from the active's admin server.",
  slots:
    "Shows the slot map of several clusters over one key space (which cluster serves which slots, moves\n" +
    "in progress). `move` begins moving slots FROM-TO to another cluster and waits until the source\n" +
    "cluster has drained them and committed the move (exit 81 if --wait runs out first; the move goes on).",
} as const satisfies Record<CommandName, string>;

/** `lock --help` / `lock COMMAND --help`. */
export function helpText(command: CommandName | undefined): string {
  const commands = command === undefined ? (Object.keys(USAGE) as CommandName[]) : [command];
  const lines: string[] = ["Usage:"];
  for (const name of commands) lines.push(`  ${USAGE[name]}`);
  lines.push("");
  for (const name of commands) lines.push(`lock ${name}: ${ABOUT[name]}`, "");
  lines.push("Flags:");
  for (const [name, flag] of Object.entries(FLAGS)) {
    if (command !== undefined && flag.for !== "all" && !(flag.for as readonly string[]).includes(command))
      continue;
    const value = flag.type === "string" ? ` ${valueName(name)}` : "";
    const env = flag.env ? ` [${flag.env}]` : "";
    lines.push(`${`  --${name}${value}`.padEnd(30)} ${flag.help}${env}`);
  }
  lines.push(
    "",
    "Durations: 500ms, 30s, 1.5s, 2m, 1h, or a number of seconds.",
    `Secrets come from files or the environment, never from flags (LOCK_AUTH_TOKEN, LOCK_ADMIN_TOKEN hold one itself).`,
    `Without --servers or LOCK_SERVERS, lock uses ${DEFAULTS.servers}.`,
    "",
    "Exit status:",
  );
  for (const { status, meaning } of Object.values(EXIT_CODES))
    lines.push(`  ${String(status).padStart(3)}  ${meaning}`);
  lines.push(
    "  128+n  lock run: signal n killed the command, or interrupted lock while it waited for the lock",
    "  lock run otherwise exits with the command's status.",
  );
  return lines.join("\n");
}

function valueName(flag: string): string {
  if (flag.endsWith("-file")) return "FILE";
  if (flag === "servers") return "HOST:PORT,...";
  if (flag === "admin") return "[https://]HOST:PORT,...";
  if (flag === "prefix") return "P";
  if (flag === "limit") return "N";
  if (flag === "to") return "CLUSTER";
  if (DURATION_FLAGS.has(flag)) return "DURATION";
  return "VALUE";
}
