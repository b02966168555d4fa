import { z } from "zod";
import { envHostName, loadSettings } from "@mailroom/kit/config.js";

/**
 * The accounts unit's settings: domain checks, the DNS records it tells domains to publish, and
 * the bootstrap file; what every process shares (NATS, store, secret, URLs) is kit's `loadConfig`.
 */
const schema = z.object({
  /** Resolvers for domain checks, `host[:port]` comma-separated (system resolvers when unset). */
  MAILROOM_DNS_SERVERS: z.string().optional(),
  /** The SPF include domains are told to publish (default `_spf.mailroom.local`, the domain's). */
  MAILROOM_SPF_INCLUDE: z.string().optional(),
  /**
   * The public host name where the inbound unit's SMTP port is reachable on port 25, the
   * target of the bounce domain's MX record shown with a domain's records.
   */
  MAILROOM_INBOUND_MX_HOST: envHostName,
  /**
   * Domain of the VERP return paths and mailto unsubscribes; set, domains show no bounce
   * records of their own (the operator publishes them once). Also read by delivery and the
   * inbound unit, which declare it too.
   */
  MAILROOM_BOUNCE_DOMAIN: envHostName,
  /** A JSON file of workspaces, keys, senders, contacts and templates loaded idempotently at start (DESIGN §5). */
  MAILROOM_BOOTSTRAP: z.string().optional(),
});

export interface AccountsSettings {
  dnsServers?: string;
  spfInclude?: string;
  inboundMxHost?: string;
  bounceDomain?: string;
  bootstrapFile?: string;
}

/** Reads and validates the accounts unit's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadAccountsSettings(env: NodeJS.ProcessEnv = process.env): AccountsSettings {
  const c = loadSettings(schema, env);
  return {
    dnsServers: c.MAILROOM_DNS_SERVERS || undefined,
    spfInclude: c.MAILROOM_SPF_INCLUDE || undefined,
    inboundMxHost: c.MAILROOM_INBOUND_MX_HOST,
    bounceDomain: c.MAILROOM_BOUNCE_DOMAIN,
    bootstrapFile: c.MAILROOM_BOOTSTRAP || undefined,
  };
}
