import { generateKeyPair } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { promisify } from "node:util";
import { DKIM_SELECTOR } from "../domain/dns-policy.js";
import type { DkimKeyPair, TxtResolver } from "../domain/ports.js";

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
export function createResolver(servers?: string, opts: { timeoutMs?: number; tries?: number } = {}): TxtResolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
  const list = (servers ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (list.length) resolver.setServers(list);
  return resolver;
}
