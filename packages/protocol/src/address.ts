/**
 * Node addresses as the protocol carries them (`M` redirects, peer lists): `host:port`, with an
 * IPv6 host in brackets. `isValidAddress` (fields.ts) says which strings are addresses.
 */

/** `host:port` or `[v6]:port` to what `net.connect` wants. */
export function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(":");
  const rawHost = address.slice(0, colon);
  const host = rawHost.startsWith("[") ? rawHost.slice(1, -1) : rawHost;
  return { host, port: Number(address.slice(colon + 1)) };
}

/** The inverse: brackets around an IPv6 host. */
export function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
