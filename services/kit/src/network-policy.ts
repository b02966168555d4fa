import dns from "node:dns";
import net, { type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Server-side request forgery guard for outbound requests a user's data names (webhook
 * targets, DESIGN.md §9.2; the links a pre-send check fetches, §10.5): only public unicast
 * addresses may be reached, unless the operator trusts a network with
 * MAILROOM_WEBHOOK_ALLOW_NETWORKS. Classification is ipaddr.js's (its special-purpose ranges);
 * an IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Network = [Address, number];

/** What a refused range is called in a refusal. */
const RANGE_NAMES: Record<string, string> = {
  loopback: "a loopback address",
  private: "a private address",
  uniqueLocal: "a private address",
  linkLocal: "a link-local address (cloud metadata services live there)",
  carrierGradeNat: "a carrier-grade NAT address",
  multicast: "a multicast address",
  broadcast: "a broadcast address",
  unspecified: "an unspecified address",
};

/** IPv6's global unicast block: anything outside it (IPv4-compatible ::a.b.c.d, …) is not a public target. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3") as [ipaddr.IPv6, number];

/** One address or CIDR; an address alone is its own /32 or /128. Throws on anything else. */
function parseNetwork(entry: string): Network {
  const text = entry.trim();
  if (text.includes("/")) {
    const [addr, bits] = ipaddr.parseCIDR(text);
    return [unmap(addr), unmap(addr) !== addr ? bits - 96 : bits];
  }
  const addr = unmap(ipaddr.parse(text));
  return [addr, addr.kind() === "ipv4" ? 32 : 128];
}

function unmap(addr: Address): Address {
  return addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr;
}

/** Parses MAILROOM_WEBHOOK_ALLOW_NETWORKS (comma-separated CIDRs); throws naming the bad entry. */
export function parseAllowNetworks(value: string | undefined): string[] {
  const entries = (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  for (const entry of entries) {
    try {
      parseNetwork(entry);
    } catch {
      throw new Error(`"${entry}" is not a CIDR (e.g. 10.0.0.0/8, fd00::/8) or an IP address`);
    }
  }
  return entries;
}

export type Lookup = (hostname: string, options: dns.LookupAllOptions) => Promise<dns.LookupAddress[]>;

const systemLookup: Lookup = (hostname, options) => dns.promises.lookup(hostname, options);

/** A refused connection: a webhook sender reports it as a failure that is not retried. */
export class TargetRefusedError extends Error {
  readonly code = "EWEBHOOKTARGET";
}

export class NetworkPolicy {
  private readonly allowed: Network[];

  /** `allow`: the trusted CIDRs; `lookup`: how names resolve (the system's resolver, or a test's). */
  constructor(
    readonly allow: readonly string[] = [],
    private readonly lookup: Lookup = systemLookup,
  ) {
    this.allowed = allow.map(parseNetwork);
  }

  /** Why connecting to `address` is refused, or undefined when it is public or trusted. */
  refusalOf(address: string): string | undefined {
    const kind = this.kindOf(address);
    return kind && `${address} is ${kind}`;
  }

  /** What a refused address is ("a private address", …), or undefined when it is public or trusted. */
  private kindOf(address: string): string | undefined {
    let addr: Address;
    try {
      addr = unmap(ipaddr.parse(address));
    } catch {
      return "not an IP address";
    }
    if (this.allowed.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits))) return undefined;
    const range = addr.range();
    const publicUnicast = range === "unicast" && (addr.kind() === "ipv4" || addr.match(GLOBAL_UNICAST_V6));
    if (publicUnicast) return undefined;
    return RANGE_NAMES[range] ?? "a reserved, non-public address";
  }

  /** Why a name's addresses are refused: the first one that is not allowed. */
  private refusalOfName(host: string, addresses: dns.LookupAddress[]): string | undefined {
    for (const { address } of addresses) {
      const kind = this.kindOf(address);
      if (kind) return `${host} resolves to ${address}, ${kind}`;
    }
    return undefined;
  }

  /**
   * Why a URL is refused, or undefined. A literal address is judged as it is; a name
   * by every address it resolves to now (any non-public one refuses it). A name that does not
   * resolve is accepted: it reaches nothing, and every connection checks again what it connects to.
   */
  async refusal(url: string): Promise<string | undefined> {
    const host = hostOf(url);
    if (net.isIP(host)) return this.refusalOf(host);
    let addresses: dns.LookupAddress[];
    try {
      addresses = await this.lookup(host, { all: true });
    } catch {
      return undefined;
    }
    return this.refusalOfName(host, addresses);
  }

  /**
   * A `lookup` for node:net: resolves, then refuses the connection when any address is not
   * allowed, so the address connected to is the one checked (no DNS rebinding between a
   * check and the connection).
   */
  readonly connectLookup: LookupFunction = (hostname, options, callback) => {
    const cb = callback as (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;
    this.lookup(hostname, { ...(options as dns.LookupOptions), all: true }).then(
      (addresses) => {
        const why = this.refusalOfName(hostname, addresses);
        if (why) return cb(new TargetRefusedError(why), "", 4);
        if (addresses.length === 0) return cb(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 4);
        if ((options as dns.LookupOptions).all) return cb(null, addresses);
        cb(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => cb(err, "", 4),
    );
  };
}

/** The URL's host without IPv6 brackets ("[::1]" → "::1"). */
export function hostOf(url: string): string {
  const host = new URL(url).hostname;
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
