import { adminGet } from "./admin-http.js";
import type { StatusCommand } from "./args.js";
import { CliError } from "./errors.js";
import { type ProbeError, probeInfo } from "./info-probe.js";
import type { Settings } from "./settings.js";
import { type AdminStatus, formatStatus, statusView, type Target } from "./status-view.js";

export interface StatusIo {
  readonly stdout: (text: string) => void;
}

/**
 * `lock status`: asks every node at once (`I` on each lock address, `GET /status` on each admin
 * address) and prints one row per node. A node that does not answer is a DOWN row, not a failure:
 * the exit status is 0 as long as one node answered (AUTH_FAILED or NO_SERVER when none did).
 *
 * When --servers and --admin list the same number of addresses, the n-th of each are taken to be
 * the same node, so a node that is down shows as one row, not two.
 */
export async function showStatus(command: StatusCommand, settings: Settings, io: StatusIo): Promise<number> {
  const withAdmin = settings.admin.length > 0;
  const servers = settings.serversDefaulted && withAdmin ? [] : settings.client.servers;
  const paired = servers.length === settings.admin.length;
  const pairs: Array<[string | undefined, string | undefined]> = paired
    ? servers.map((server, i) => [server, settings.admin[i]])
    : [
        ...servers.map((server): [string, undefined] => [server, undefined]),
        ...settings.admin.map((admin): [undefined, string] => [undefined, admin]),
      ];
  let authFailures = 0;
  const targets = await Promise.all(
    pairs.map(async ([lockAddress, adminAddress]): Promise<Target> => {
      const [info, status] = await Promise.all([
        lockAddress === undefined
          ? undefined
          : probeInfo(lockAddress, {
              authToken: settings.client.authToken,
              tls: settings.tls,
              timeoutMs: settings.timeoutMs,
            }).then(
              (fields) => ({ fields }),
              (error: ProbeError) => {
                if (error.reason === "auth") authFailures++;
                return { error: `lockd ${lockAddress}: ${error.message}` };
              },
            ),
        adminAddress === undefined
          ? undefined
          : fetchStatus(adminAddress, settings).catch((error: CliError) => {
              if (error.code === "AUTH_FAILED") authFailures++;
              return { error: error.message };
            }),
      ]);
      return { lockAddress, adminAddress, info, status };
    }),
  );
  const view = statusView(targets);
  io.stdout(command.json ? `${JSON.stringify(view, null, 2)}\n` : `${formatStatus(view, withAdmin)}\n`);
  if (view.nodes.some((row) => row.state === "up")) return 0;
  throw new CliError(authFailures > 0 ? "AUTH_FAILED" : "NO_SERVER", "no node answered");
}

async function fetchStatus(address: string, settings: Settings): Promise<{ status: AdminStatus }> {
  const answer = await adminGet(address, "/status", {
    token: settings.adminToken,
    timeoutMs: settings.timeoutMs,
    tls: settings.tls,
  });
  if (answer.status !== 200)
    throw new CliError("REFUSED", `admin server ${address} answered ${answer.status}`);
  return { status: answer.body as AdminStatus };
}
