import { z } from "zod";
import { envHostName, loadSettings } from "@mailroom/kit/config.js";

/**
 * The inbound unit's settings, read from MAILROOM_INBOUND_* and the bounce domain; what every
 * process shares (NATS, store, secret, URLs) is kit's `loadConfig`. The MX host of the bounce
 * domain (MAILROOM_INBOUND_MX_HOST) is the directory's to show, so its settings declare it.
 */
const schema = z.object({
  /** The SMTP port bounces, complaints and mailto unsubscribes arrive on. */
  MAILROOM_INBOUND_PORT: z.coerce.number().int().min(0).max(65535).default(2525),
  /** The largest message accepted, in bytes (a DSN quoting a big message still fits). */
  MAILROOM_INBOUND_MAX_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  /** How long a sent delivery is remembered, so a late bounce still finds it. */
  MAILROOM_INBOUND_REMEMBER_DAYS: z.coerce.number().min(1).default(30),
  /**
   * Domain of the VERP return paths and mailto unsubscribe addresses, accepted here besides
   * any domain routed to this unit. Unset: each sender's own `bounces.<domain>`. (Also read
   * by delivery and the directory, which declare it too.)
   */
  MAILROOM_BOUNCE_DOMAIN: envHostName,
});

export interface InboundSettings {
  port: number;
  maxMessageBytes: number;
  rememberMs: number;
  bounceDomain?: string;
}

/** Reads and validates the inbound settings; a bad value throws kit's ConfigError naming the variable. */
export function loadInboundSettings(env: NodeJS.ProcessEnv = process.env): InboundSettings {
  const c = loadSettings(schema, env);
  return {
    port: c.MAILROOM_INBOUND_PORT,
    maxMessageBytes: c.MAILROOM_INBOUND_MAX_BYTES,
    rememberMs: Math.round(c.MAILROOM_INBOUND_REMEMBER_DAYS * 24 * 3600 * 1000),
    bounceDomain: c.MAILROOM_BOUNCE_DOMAIN,
  };
}
