import { createPublicKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { configError, envHostName, loadSettings } from "@mailroom/kit/config.js";

/** An optional secret or list; empty reads as unset. */
const optionalText = z
  .string()
  .optional()
  .transform((v) => v?.trim() || undefined);

/** An SNS topic's ARN (aws, aws-cn and aws-us-gov partitions). */
const TOPIC_ARN = /^arn:aws(?:-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256}$/;

/**
 * The inbound unit's settings, read from MAILROOM_INBOUND_* and the bounce domain; what every
 * process shares (NATS, store, secret, URLs) is kit's `loadConfig`.
 */
const schema = z.object({
  /** The SMTP port bounces, complaints and mailto unsubscribes arrive on. */
  MAILROOM_INBOUND_PORT: z.coerce.number().int().min(0).max(65535).default(2525),
  /** The largest message accepted, in bytes (received mail with attachments; a DSN quoting a big message still fits). */
  MAILROOM_INBOUND_MAX_BYTES: z.coerce.number().int().min(1024).default(35 * 1024 * 1024),
  /** How long received email (record, raw message, attachments) is kept, in days (DESIGN §10.4). */
  MAILROOM_INBOUND_RETENTION_DAYS: z.coerce.number().min(1).default(30),
  /** Messages one sender IP may hand over per minute (SMTP 421 4.7.0 beyond). */
  MAILROOM_INBOUND_RATE_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /**
   * The public host name of the inbound unit's SMTP port: an inbound domain is verified when
   * one of its MX records names it. (The accounts unit declares it too: it shows it as the bounce
   * domain's MX; both default to the same name.)
   */
  MAILROOM_INBOUND_MX_HOST: envHostName,
  /** Resolvers for the MX checks, `host[:port]` comma-separated (system resolvers when unset; as the accounts unit's). */
  MAILROOM_DNS_SERVERS: optionalText,
  /** A spamd (tcp://host:port) scoring received mail; unset: `spamassassin` when on the PATH, else no score. */
  MAILROOM_SPAMD_URL: optionalText,
  /** Received messages larger than this are not spam-scored (0: never scored). */
  MAILROOM_INBOUND_SPAM_MAX_BYTES: z.coerce.number().int().min(0).default(512 * 1024),
  /** How long a sent delivery is remembered, so a late bounce still finds it. */
  MAILROOM_INBOUND_REMEMBER_DAYS: z.coerce.number().min(1).default(30),
  /**
   * Domain of the VERP return paths and mailto unsubscribe addresses, accepted here besides
   * any domain routed to this unit. Unset: each sender's own `bounces.<domain>`. (Also read
   * by delivery and the accounts unit, which declare it too.)
   */
  MAILROOM_BOUNCE_DOMAIN: envHostName,
  /**
   * Relay provider event webhooks (DESIGN §9.7); each provider's endpoint answers 404 until
   * its variable is set. SES: the SNS topics (comma-separated ARNs) whose notifications are
   * taken; an SNS signature only proves a message came through SNS, from anyone's topic.
   */
  MAILROOM_SES_TOPIC_ARNS: optionalText.refine(
    (v) => v === undefined || v.split(",").every((arn) => TOPIC_ARN.test(arn.trim())),
    "must be comma-separated SNS topic ARNs (arn:aws:sns:<region>:<account>:<topic>)",
  ),
  /** Postmark signs nothing: the webhook URL carries HTTP basic auth, `user:password`. */
  MAILROOM_POSTMARK_WEBHOOK_AUTH: optionalText.refine((v) => v === undefined || /^[^:]+:.+$/.test(v), "must be user:password"),
  /** SendGrid's signed event webhook: its verification key (base64 DER, as the SendGrid console shows it). */
  MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: optionalText.refine(
    (v) => v === undefined || sendgridKey(v) !== undefined,
    "must be the signed event webhook's verification key (an ECDSA P-256 public key, base64 DER)",
  ),
  /** Mailgun's HTTP webhook signing key (Sending → Webhooks). */
  MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: optionalText,
  /**
   * Tests only: the SNS signing certificate is read from this PEM file instead of fetched
   * from the SigningCertURL (whose host rule still applies). Refused with NODE_ENV=production.
   */
  MAILROOM_TEST_SNS_SIGNING_CERT_FILE: optionalText,
  NODE_ENV: z.string().optional(),
});

/** The SendGrid verification key as a P-256 public key; undefined when it is not one. */
function sendgridKey(base64Der: string): KeyObject | undefined {
  try {
    const key = createPublicKey({ key: Buffer.from(base64Der, "base64"), format: "der", type: "spki" });
    return key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1" ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The relay providers whose webhooks this unit takes, each with what authenticates its requests. */
export interface ProviderSettings {
  /** testCertificate: the PEM of MAILROOM_TEST_SNS_SIGNING_CERT_FILE, read at start. */
  ses?: { topicArns: string[]; testCertificate?: string };
  postmark?: { user: string; password: string };
  sendgrid?: { publicKey: KeyObject };
  mailgun?: { signingKey: string };
}

/** The MX host when MAILROOM_INBOUND_MX_HOST is unset (the accounts unit's default too). */
export const DEFAULT_INBOUND_MX_HOST = "inbound.mailroom.local";

export interface InboundSettings {
  port: number;
  maxMessageBytes: number;
  rememberMs: number;
  retentionMs: number;
  ratePerMinute: number;
  inboundMxHost: string;
  dnsServers?: string;
  spamdUrl?: string;
  spamMaxBytes: number;
  bounceDomain?: string;
  providers: ProviderSettings;
}

/** Reads and validates the inbound settings; a bad value throws kit's ConfigError naming the variable. */
export function loadInboundSettings(env: NodeJS.ProcessEnv = process.env): InboundSettings {
  const c = loadSettings(schema, env);
  return {
    port: c.MAILROOM_INBOUND_PORT,
    maxMessageBytes: c.MAILROOM_INBOUND_MAX_BYTES,
    rememberMs: Math.round(c.MAILROOM_INBOUND_REMEMBER_DAYS * 24 * 3600 * 1000),
    retentionMs: Math.round(c.MAILROOM_INBOUND_RETENTION_DAYS * 24 * 3600 * 1000),
    ratePerMinute: c.MAILROOM_INBOUND_RATE_PER_MINUTE,
    inboundMxHost: c.MAILROOM_INBOUND_MX_HOST ?? DEFAULT_INBOUND_MX_HOST,
    dnsServers: c.MAILROOM_DNS_SERVERS,
    spamdUrl: c.MAILROOM_SPAMD_URL,
    spamMaxBytes: c.MAILROOM_INBOUND_SPAM_MAX_BYTES,
    bounceDomain: c.MAILROOM_BOUNCE_DOMAIN,
    providers: providerSettings(c),
  };
}

function providerSettings(c: z.output<typeof schema>): ProviderSettings {
  if (c.MAILROOM_TEST_SNS_SIGNING_CERT_FILE && c.NODE_ENV === "production") {
    throw configError([{ variable: "MAILROOM_TEST_SNS_SIGNING_CERT_FILE", message: "is for tests: it replaces Amazon's SNS certificate, so NODE_ENV=production refuses it" }]);
  }
  if (c.MAILROOM_TEST_SNS_SIGNING_CERT_FILE && !c.MAILROOM_SES_TOPIC_ARNS) {
    throw configError([{ variable: "MAILROOM_TEST_SNS_SIGNING_CERT_FILE", message: "set, but MAILROOM_SES_TOPIC_ARNS is not: no SES notification is taken to use it" }]);
  }
  const providers: ProviderSettings = {};
  if (c.MAILROOM_SES_TOPIC_ARNS) {
    providers.ses = {
      topicArns: c.MAILROOM_SES_TOPIC_ARNS.split(",").map((a) => a.trim()),
      ...(c.MAILROOM_TEST_SNS_SIGNING_CERT_FILE ? { testCertificate: readTestCertificate(c.MAILROOM_TEST_SNS_SIGNING_CERT_FILE) } : {}),
    };
  }
  if (c.MAILROOM_POSTMARK_WEBHOOK_AUTH) {
    const at = c.MAILROOM_POSTMARK_WEBHOOK_AUTH.indexOf(":");
    providers.postmark = { user: c.MAILROOM_POSTMARK_WEBHOOK_AUTH.slice(0, at), password: c.MAILROOM_POSTMARK_WEBHOOK_AUTH.slice(at + 1) };
  }
  if (c.MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY) providers.sendgrid = { publicKey: sendgridKey(c.MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY)! };
  if (c.MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY) providers.mailgun = { signingKey: c.MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY };
  return providers;
}

/** MAILROOM_TEST_SNS_SIGNING_CERT_FILE read at start: a missing file or one without a certificate is refused now, not on each notification. */
function readTestCertificate(file: string): string {
  const variable = "MAILROOM_TEST_SNS_SIGNING_CERT_FILE";
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw configError([{ variable, message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }]);
  }
  try {
    new X509Certificate(pem);
  } catch {
    throw configError([{ variable, message: `${file} holds no PEM certificate` }]);
  }
  return pem;
}
