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

const MAX_HOST_LENGTH = 253;

function isHostChar(c: number, bracketed: boolean): boolean {
  if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) return true;
  // "-", "." and "_" appear in names and IPv4; ":" and "%" (a zone) only inside IPv6 brackets.
  if (c === 45 || c === 46 || c === 95) return true;
  return bracketed && (c === 58 || c === 37);
}

/**
 * True for a node address `host:port`: a DNS name or IPv4 address, or an IPv6 address in brackets
 * (`[::1]:7420`), and a port 1–65535 without leading zeros.
 */
export function isValidAddress(address: string): boolean {
  const colon = address.lastIndexOf(":");
  if (colon <= 0) return false;
  const port = address.slice(colon + 1);
  if (port.length === 0 || port.length > 5 || port.charCodeAt(0) === 48) return false;
  for (let i = 0; i < port.length; i++) {
    const c = port.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  if (Number(port) > 65_535) return false;
  const bracketed = address.charCodeAt(0) === 0x5b;
  const hostStart = bracketed ? 1 : 0;
  const hostEnd = bracketed ? colon - 1 : colon;
  if (bracketed && address.charCodeAt(hostEnd) !== 0x5d) return false;
  if (hostEnd <= hostStart || hostEnd - hostStart > MAX_HOST_LENGTH) return false;
  for (let i = hostStart; i < hostEnd; i++) {
    if (!isHostChar(address.charCodeAt(i), bracketed)) return false;
  }
  return true;
}
