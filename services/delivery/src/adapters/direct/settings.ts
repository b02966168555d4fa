import { readFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import { Resolver } from "node:dns";
import { z } from "zod";
import { configError, envHostName, loadSettings } from "@mailroom/kit/config.js";
import { addressLiteral } from "../smtp-client.js";

/** What one destination domain may take; every field has a default (MAILROOM_DELIVERY_DOMAIN_*). */
export interface DomainLimits {
  /** Connections open at once to the domain's MX hosts. */
  connections: number;
  /** Messages carried by one connection before it is closed. */
  messagesPerConnection: number;
  /** Messages per second to the domain; 0: no limit. */
  rate: number;
}

export interface DirectSettings {
  /**
   * The EHLO name: should be the sending address's PTR name, which resolves back to it.
   * Empty when none is set and the host's name is not fully qualified: the address literal
   * of the connection's source address is sent then (what `effectiveEhlo` reports).
   */
  ehloName: string;
  /** The source address of outgoing connections; unset: the system's choice. */
  localAddress?: string;
  /** DNS servers asked for MX, A/AAAA and MTA-STS TXT records (`ip` or `ip:port`); empty: the system's. */
  dnsServers: string[];
  /** The SMTP port of MX hosts (25; another only for tests). */
  mxPort: number;
  /** Limits for any destination domain not listed in `domainLimits`. */
  defaultLimits: DomainLimits;
  /** Per-domain overrides (lower-case domain → limits, missing fields from the defaults). */
  domainLimits: ReadonlyMap<string, DomainLimits>;
  /** How long a send waits for a connection or a rate slot to its domain before it is deferred. */
  waitMs: number;
  /** An idle connection to an MX host is closed after this. */
  idleMs: number;
  /** The HTTPS port MTA-STS policies are fetched from (443; another only for tests). */
  mtaStsPort: number;
  /** Extra trusted CA certificates (PEM) for MTA-STS policy fetches and enforce-mode MX certificates. */
  extraCa?: string;
}

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const limitsSchema = z
  .object({
    connections: int(1, 1_000).optional(),
    messagesPerConnection: int(1, 100_000).optional(),
    rate: z.number().min(0).max(100_000).optional(),
  })
  .strict();

const domainLimitsSchema = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (!raw?.trim()) return {};
    try {
      return JSON.parse(raw) as unknown;
    } catch (err) {
      ctx.addIssue({ code: "custom", message: `not JSON: ${(err as Error).message}` });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1), limitsSchema));

const dnsServersSchema = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    const list = (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    try {
      if (list.length) new Resolver().setServers(list);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: `not a list of ip or ip:port: ${(err as Error).message}` });
      return z.NEVER;
    }
    return list;
  });

/** A fully qualified host name (two labels or more, the last not numeric: no IP address). */
const FQDN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const isFqdn = (name: string) => FQDN.test(name.replace(/\.$/, ""));

/** Direct delivery's test overrides: NODE_ENV=production refuses any other value. */
const TEST_PORTS = { MAILROOM_DELIVERY_MX_PORT: 25, MAILROOM_DELIVERY_MTA_STS_PORT: 443 } as const;

const schema = z.object({
  /** EHLO name; default the host's name (os.hostname()) when fully qualified, else the address literal. */
  MAILROOM_DELIVERY_EHLO_NAME: envHostName.refine(
    (v) => v === undefined || isFqdn(v),
    "must be a fully qualified host name (the PTR name of the sending address, e.g. mta1.example.com)",
  ),
  /** Source IP address of connections to MX hosts; default the system's choice. */
  MAILROOM_DELIVERY_LOCAL_ADDRESS: z
    .string()
    .optional()
    .transform((v) => v?.trim() || undefined)
    .refine((v) => v === undefined || net.isIP(v) !== 0, "not an IP address"),
  /** DNS servers for MX, A/AAAA and MTA-STS lookups, comma-separated `ip[:port]`; default the system's. */
  MAILROOM_DELIVERY_DNS_SERVERS: dnsServersSchema,
  /** SMTP port of MX hosts; 25 (test override). */
  MAILROOM_DELIVERY_MX_PORT: int(1, 65_535).default(25),
  /** Connections at once per destination domain (Postfix's default_destination_concurrency_limit). */
  MAILROOM_DELIVERY_DOMAIN_CONNECTIONS: int(1, 1_000).default(20),
  /** Messages over one connection to an MX host before it is closed. */
  MAILROOM_DELIVERY_DOMAIN_MESSAGES_PER_CONNECTION: int(1, 100_000).default(100),
  /** Messages per second per destination domain; 0: no limit. */
  MAILROOM_DELIVERY_DOMAIN_RATE: z.coerce.number().min(0).max(100_000).default(0),
  /** Per-domain overrides, JSON: {"gmail.com":{"connections":10,"messagesPerConnection":50,"rate":5}}. */
  MAILROOM_DELIVERY_DOMAIN_LIMITS: domainLimitsSchema,
  /** How long a send waits for a connection or rate slot to its domain before it is deferred. */
  MAILROOM_DELIVERY_DOMAIN_WAIT_MS: int(0, 600_000).default(20_000),
  /** Idle connections to MX hosts are closed after this. */
  MAILROOM_DELIVERY_CONNECTION_IDLE_MS: int(0, 600_000).default(5_000),
  /** HTTPS port of MTA-STS policy hosts; 443 (test override). */
  MAILROOM_DELIVERY_MTA_STS_PORT: int(1, 65_535).default(443),
  /** A PEM file of CA certificates trusted beside Node's bundled ones for MTA-STS (policy fetch, enforce-mode MX certificates). */
  MAILROOM_DELIVERY_EXTRA_CA_FILE: z.string().optional().transform((v) => v?.trim() || undefined),
});

/** Every variable of direct delivery (read only when a route is direct). */
export const DIRECT_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** Direct delivery's variables set (non-empty) in `env`: when no route is direct they do nothing. */
export function directVariablesSet(env: NodeJS.ProcessEnv): string[] {
  return DIRECT_VARIABLES.filter((v) => (env[v] ?? "").trim() !== "");
}

/** Reads direct delivery's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadDirectSettings(env: NodeJS.ProcessEnv = process.env): DirectSettings {
  const c = loadSettings(schema, env);
  if (env.NODE_ENV === "production") {
    const overridden = Object.entries(TEST_PORTS).filter(([variable, port]) => c[variable as keyof typeof TEST_PORTS] !== port);
    if (overridden.length) {
      throw configError(overridden.map(([variable, port]) => ({ variable, message: `is a test override (MX hosts listen on ${port === 25 ? "port 25" : "HTTPS port 443"}): NODE_ENV=production refuses it` })));
    }
  }
  const defaultLimits: DomainLimits = {
    connections: c.MAILROOM_DELIVERY_DOMAIN_CONNECTIONS,
    messagesPerConnection: c.MAILROOM_DELIVERY_DOMAIN_MESSAGES_PER_CONNECTION,
    rate: c.MAILROOM_DELIVERY_DOMAIN_RATE,
  };
  const domainLimits = new Map<string, DomainLimits>();
  for (const [domain, over] of Object.entries(c.MAILROOM_DELIVERY_DOMAIN_LIMITS)) {
    domainLimits.set(domain.trim().toLowerCase().replace(/\.$/, ""), { ...defaultLimits, ...over });
  }
  let extraCa: string | undefined;
  if (c.MAILROOM_DELIVERY_EXTRA_CA_FILE) {
    try {
      extraCa = readFileSync(c.MAILROOM_DELIVERY_EXTRA_CA_FILE, "utf8");
    } catch (err) {
      throw configError([{ variable: "MAILROOM_DELIVERY_EXTRA_CA_FILE", message: `cannot read ${c.MAILROOM_DELIVERY_EXTRA_CA_FILE}: ${(err as Error).message}` }]);
    }
    if (!extraCa.includes("-----BEGIN CERTIFICATE-----")) {
      throw configError([{ variable: "MAILROOM_DELIVERY_EXTRA_CA_FILE", message: "holds no PEM certificate" }]);
    }
  }
  return {
    ehloName: (c.MAILROOM_DELIVERY_EHLO_NAME ?? qualifiedHostName()).replace(/\.$/, ""),
    localAddress: c.MAILROOM_DELIVERY_LOCAL_ADDRESS,
    dnsServers: c.MAILROOM_DELIVERY_DNS_SERVERS,
    mxPort: c.MAILROOM_DELIVERY_MX_PORT,
    defaultLimits,
    domainLimits,
    waitMs: c.MAILROOM_DELIVERY_DOMAIN_WAIT_MS,
    idleMs: c.MAILROOM_DELIVERY_CONNECTION_IDLE_MS,
    mtaStsPort: c.MAILROOM_DELIVERY_MTA_STS_PORT,
    extraCa,
  };
}

/** The host's name when it is fully qualified; "" otherwise (many MX hosts refuse a bare "vm" in EHLO). */
function qualifiedHostName(): string {
  const name = os.hostname().toLowerCase();
  return isFqdn(name) ? name : "";
}

/**
 * The EHLO direct delivery really sends, for status pages: the name, else the address literal
 * of the source address ("[192.0.2.10]"); "" when neither is known (the system picks the address).
 */
export function effectiveEhlo(settings: Pick<DirectSettings, "ehloName" | "localAddress">): string {
  if (settings.ehloName) return settings.ehloName;
  return settings.localAddress ? addressLiteral(settings.localAddress) : "";
}

/** The limits that apply to one destination domain. */
export function limitsFor(settings: Pick<DirectSettings, "defaultLimits" | "domainLimits">, domain: string): DomainLimits {
  return settings.domainLimits.get(domain) ?? settings.defaultLimits;
}
