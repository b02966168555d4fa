import { generateKeyPair } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { isIPv4 } from "node:net";
import { promisify } from "node:util";
import { spf } from "mailauth/lib/spf/index.js";
import { DKIM_SELECTOR } from "../domain/dns-policy.js";
import type { SendingDns, SpfResult } from "../domain/direct-sending.js";
import type { DkimKeyPair, TxtResolver } from "@mailroom/records/ports.js";

const generateRsa = promisify(generateKeyPair);

/** A fresh RSA 2048 DKIM key pair (about a second of CPU). */
export async function generateDkimKeyPair(selector = DKIM_SELECTOR): Promise<DkimKeyPair> {
  const { publicKey, privateKey } = await generateRsa("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { selector, publicKey: (publicKey as Buffer).toString("base64"), privateKeyPem: privateKey as string };
}

/**
 * node:dns Resolver, pointed at MAILROOM_DNS_SERVERS ("127.0.0.1:5353,…") when set,
 * else at the system's resolvers.
 */
export function createResolver(servers?: string, opts: { timeoutMs?: number; tries?: number } = {}): TxtResolver & Resolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
  const list = (servers ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (list.length) resolver.setServers(list);
  return resolver;
}

/** The PTR query name of an address: `4.3.2.1.in-addr.arpa`, or nibbles under `ip6.arpa`. */
export function reverseName(address: string): string {
  if (isIPv4(address)) return `${address.split(".").reverse().join(".")}.in-addr.arpa`;
  const [head, tail = ""] = address.toLowerCase().split("::");
  const groups = (part: string) => (part ? part.split(":") : []);
  const left = groups(head);
  const right = address.includes("::") ? groups(tail) : [];
  const all = [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return `${all.map((g) => g.padStart(4, "0")).join("").split("").reverse().join(".")}.ip6.arpa`;
}

const SPF_RESULTS = new Set<string>(["pass", "fail", "softfail", "neutral", "none", "temperror", "permerror"]);

/**
 * The direct-sending check's DNS over the same resolver as domain verification
 * (MAILROOM_DNS_SERVERS): PTR and A/AAAA lookups, and mailauth's RFC 7208 SPF evaluation
 * (includes, redirects, macros, the 10-lookup limit) with every query through that resolver.
 */
export function createSendingDns(resolver: Resolver): SendingDns {
  const settle = async (p: Promise<string[]>) => p.catch((err: NodeJS.ErrnoException) => {
    if (["ENOTFOUND", "ENODATA"].includes(err.code ?? "")) return [] as string[];
    throw err;
  });
  return {
    // A PTR query, not resolver.reverse(): that also reads /etc/hosts, and receivers see only DNS.
    reverse: (address) => resolver.resolvePtr(reverseName(address)),
    async addresses(name) {
      const [v4, v6] = await Promise.all([settle(resolver.resolve4(name)), settle(resolver.resolve6(name))]);
      return [...v4, ...v6];
    },
    async spf(input) {
      const res = await spf({
        ...input,
        mta: "mailroom-console-check",
        resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<never>,
      });
      const result = (res.status.result === "temperr" ? "temperror" : res.status.result) as string;
      const comment = res.status.comment?.replace(/^[^:]*: /, "");
      return { result: (SPF_RESULTS.has(result) ? result : "neutral") as SpfResult, record: res.rr, comment };
    },
  };
}
