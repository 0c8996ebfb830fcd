// Which addresses an external URL may reach: every IANA special-purpose range (IPv4 and IPv6 registries) written
// down once below, plus ipaddr.js's own classification as a second net (anything it does not call `unicast` is
// refused too). Addresses that embed an IPv4 address (IPv4-mapped, NAT64) are judged by the embedded address as
// well, so `::ffff:127.0.0.1` and `64:ff9b::10.0.0.1` cannot reach what `127.0.0.1` and `10.0.0.1` cannot.
// A refusal names the rule ("a private-use address (10.0.0.0/8)"), never the resolved address.
import ipaddr from 'ipaddr.js';

export interface SpecialRange {
  cidr: string;
  /** What the range is, as the refusal message says it: "a <name> address (<cidr>)". */
  name: string;
  /** For ranges whose addresses carry an IPv4 address in their last 32 bits. */
  embedsIPv4?: boolean;
}

/** IANA IPv4 Special-Purpose Address Registry (and multicast / reserved space). */
export const IPV4_SPECIAL: readonly SpecialRange[] = [
  { cidr: '0.0.0.0/8', name: '"this network"' },
  { cidr: '10.0.0.0/8', name: 'private-use' },
  { cidr: '100.64.0.0/10', name: 'shared (carrier-grade NAT)' },
  { cidr: '127.0.0.0/8', name: 'loopback' },
  { cidr: '169.254.0.0/16', name: 'link-local' },
  { cidr: '172.16.0.0/12', name: 'private-use' },
  { cidr: '192.0.0.0/24', name: 'IETF protocol assignment' },
  { cidr: '192.0.2.0/24', name: 'documentation (TEST-NET-1)' },
  { cidr: '192.88.99.0/24', name: 'deprecated 6to4 relay anycast' },
  { cidr: '192.168.0.0/16', name: 'private-use' },
  { cidr: '198.18.0.0/15', name: 'benchmarking' },
  { cidr: '198.51.100.0/24', name: 'documentation (TEST-NET-2)' },
  { cidr: '203.0.113.0/24', name: 'documentation (TEST-NET-3)' },
  { cidr: '224.0.0.0/4', name: 'multicast' },
  { cidr: '255.255.255.255/32', name: 'limited broadcast' },
  { cidr: '240.0.0.0/4', name: 'reserved (future use)' },
];

/** IANA IPv6 Special-Purpose Address Registry (and multicast, deprecated site-local). */
export const IPV6_SPECIAL: readonly SpecialRange[] = [
  { cidr: '::/128', name: 'unspecified' },
  { cidr: '::1/128', name: 'loopback' },
  { cidr: '::ffff:0:0/96', name: 'IPv4-mapped', embedsIPv4: true },
  { cidr: '::/96', name: 'IPv4-compatible (deprecated)', embedsIPv4: true },
  { cidr: '64:ff9b::/96', name: 'NAT64 (IPv4/IPv6 translation)', embedsIPv4: true },
  { cidr: '64:ff9b:1::/48', name: 'NAT64 local-use (IPv4/IPv6 translation)', embedsIPv4: true },
  { cidr: '100::/64', name: 'discard-only' },
  { cidr: '2001:db8::/32', name: 'documentation' },
  { cidr: '2001::/23', name: 'IETF protocol assignment' },
  { cidr: '2002::/16', name: '6to4' },
  { cidr: '3fff::/20', name: 'documentation' },
  { cidr: '5f00::/16', name: 'segment-routing (SRv6 SID)' },
  { cidr: 'fc00::/7', name: 'unique-local' },
  { cidr: 'fe80::/10', name: 'link-local' },
  { cidr: 'fec0::/10', name: 'site-local (deprecated)' },
  { cidr: 'ff00::/8', name: 'multicast' },
];

interface Compiled extends SpecialRange {
  net: [ipaddr.IPv4 | ipaddr.IPv6, number];
}

const compile = (list: readonly SpecialRange[]): Compiled[] =>
  list.map((r) => ({ ...r, net: ipaddr.parseCIDR(r.cidr) as [ipaddr.IPv4 | ipaddr.IPv6, number] }));
const V4 = compile(IPV4_SPECIAL);
const V6 = compile(IPV6_SPECIAL);

const describe = (r: SpecialRange) => `a ${r.name} address (${r.cidr})`;

/** The address in the last 32 bits of an IPv6 address. */
function embedded(addr: ipaddr.IPv6): ipaddr.IPv4 {
  const p = addr.parts;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

function judgeV4(addr: ipaddr.IPv4): string | null {
  const hit = V4.find((r) => addr.match(r.net as [ipaddr.IPv4, number]));
  if (hit) return describe(hit);
  const range = addr.range();
  return range === 'unicast' ? null : `a special-purpose address (${range})`;
}

/**
 * Why an address may not be reached, as words naming the rule ("a loopback address (127.0.0.0/8)"), or null when
 * it is an ordinary global unicast address. Text that is not an IP address is refused too.
 */
export function refusalFor(ip: string): string | null {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return 'not an IP address';
  }
  if (addr.kind() === 'ipv4') return judgeV4(addr as ipaddr.IPv4);
  const v6 = addr as ipaddr.IPv6;
  const hit = V6.find((r) => v6.match(r.net as [ipaddr.IPv6, number]));
  if (hit?.embedsIPv4) {
    // An IPv4-mapped address is how a dual-stack socket names an IPv4 peer: judged by the IPv4 address alone.
    // The other embedding forms are refused whatever they carry; the message names the inner rule when there is one.
    const inner = judgeV4(embedded(v6));
    if (hit.cidr === '::ffff:0:0/96') return inner ? `an IPv4-mapped form of ${inner}` : null;
    return inner ? `${describe(hit)} embedding ${inner}` : describe(hit);
  }
  if (hit) return describe(hit);
  const range = v6.range();
  return range === 'unicast' ? null : `a special-purpose address (${range})`;
}

export const isRefusedAddress = (ip: string): boolean => refusalFor(ip) !== null;
