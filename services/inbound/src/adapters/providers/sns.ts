import { createVerify, X509Certificate } from "node:crypto";
import { LRUCache } from "lru-cache";
import { unavailable } from "@mailroom/kit/errors.js";
import { isObject, malformed, notAuthenticated, parseJson, text } from "./refusals.js";

/**
 * Amazon SNS HTTP(S) deliveries (how SES notifications arrive): the envelope, its signature
 * (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA, over the string AWS documents for each
 * message type) and the subscription confirmation. Verified with node:crypto rather than the
 * sns-validator package: it fetches certificates itself (no port a test can replace without
 * reaching AWS), is callback-based and untyped, and the rule is a dozen lines.
 */

export interface SnsEnvelope {
  Type: string;
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  SubscribeURL?: string;
  Token?: string;
}

/** Where the PEM certificate behind a SigningCertURL comes from (HTTPS in production). */
export interface SigningCertificates {
  get(url: URL): Promise<string>;
}

/** Follows a SubscribeURL (HTTPS GET in production). */
export interface SubscriptionConfirmer {
  confirm(url: URL): Promise<void>;
}

/** Fields of the string to sign, in order; absent ones are left out (Subject). */
const SIGNED_FIELDS: Record<string, (keyof SnsEnvelope)[]> = {
  Notification: ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"],
  SubscriptionConfirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
  UnsubscribeConfirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
};

const ALGORITHM: Record<string, string> = { "1": "RSA-SHA1", "2": "RSA-SHA256" };

/**
 * SNS's own regional hosts only: https://sns.<region>.amazonaws.com/… (sns.cn-<…>.amazonaws.com.cn
 * in China) on the default port. The label must be shaped like a region (us-east-1,
 * us-gov-west-1, ap-southeast-1): other AWS hosts under amazonaws.com, such as an S3 bucket
 * named "sns" (sns.s3.amazonaws.com, sns.s3-us-west-2.amazonaws.com), serve what anyone puts there.
 */
const SNS_HOST = /^sns\.(?:(?:us|eu|ap|sa|ca|me|af|il|mx)(?:-gov)?-[a-z]+-\d{1,2}\.amazonaws\.com|cn-[a-z]+-\d{1,2}\.amazonaws\.com\.cn)$/;

/** The name SNS's signing certificates are issued to. */
const SNS_CERTIFICATE_NAME = "sns.amazonaws.com";

const CERTIFICATE_PATH = /^\/SimpleNotificationService-[A-Za-z0-9]+\.pem$/;

/** An SNS URL (certificate, SubscribeURL) when it is on SNS's own HTTPS hosts; undefined otherwise. */
export function snsUrl(value: string | undefined): URL | undefined {
  if (!value || !URL.canParse(value)) return undefined;
  const url = new URL(value);
  if (url.protocol !== "https:" || url.port || url.username || url.password || !SNS_HOST.test(url.hostname)) return undefined;
  return url;
}

/** The string SNS signs for this message (trailing newline included). */
export function stringToSign(envelope: SnsEnvelope): string {
  const fields = SIGNED_FIELDS[envelope.Type] ?? [];
  return fields
    .filter((f) => envelope[f] !== undefined)
    .map((f) => `${f}\n${envelope[f]}\n`)
    .join("");
}

/** Parses the body as an SNS envelope (400 when it is not one). */
export function parseEnvelope(body: Uint8Array): SnsEnvelope {
  const raw = parseJson("ses", body);
  if (!isObject(raw)) throw malformed("ses", "not an SNS message");
  for (const field of ["Type", "MessageId", "TopicArn", "Timestamp", "SignatureVersion", "Signature", "SigningCertURL"] as const) {
    if (typeof raw[field] !== "string" || !raw[field]) throw malformed("ses", `SNS message without ${field}`);
  }
  if (!SIGNED_FIELDS[text(raw.Type)]) throw malformed("ses", `unknown SNS message type ${text(raw.Type)}`);
  if (typeof raw.Message !== "string") throw malformed("ses", "SNS message without Message");
  return raw as unknown as SnsEnvelope;
}

/**
 * Verifies an envelope's signature and topic; throws 401 `provider_webhook_unauthenticated`
 * for a topic not allowed, a certificate URL off SNS's hosts, a certificate not issued to
 * SNS, or a signature that does not verify. Each says why, for the log; the caller answers
 * every one alike (a refusal tells a prober nothing about which check failed).
 */
export async function verifyEnvelope(envelope: SnsEnvelope, topicArns: string[], certificates: SigningCertificates): Promise<void> {
  // Checked first: a foreign topic's subscription is never confirmed, its certificate never fetched.
  if (!topicArns.includes(envelope.TopicArn)) throw notAuthenticated("ses", `topic ${envelope.TopicArn} is not in MAILROOM_SES_TOPIC_ARNS`);
  const algorithm = ALGORITHM[envelope.SignatureVersion];
  if (!algorithm) throw notAuthenticated("ses", `unknown SignatureVersion ${envelope.SignatureVersion}`);
  const certUrl = snsUrl(envelope.SigningCertURL);
  // SNS's certificates are /SimpleNotificationService-<hash>.pem: nothing else there is fetched.
  if (!certUrl || !CERTIFICATE_PATH.test(certUrl.pathname) || certUrl.search) {
    throw notAuthenticated("ses", "SigningCertURL is not an SNS certificate on https://sns.<region>.amazonaws.com");
  }
  const certificate = await certificates.get(certUrl);
  if (!issuedToSns(certificate, certUrl)) throw notAuthenticated("ses", `the certificate at ${certUrl.href} is not issued to ${SNS_CERTIFICATE_NAME}`);
  let valid = false;
  try {
    valid = createVerify(algorithm).update(stringToSign(envelope), "utf8").verify(certificate, envelope.Signature, "base64");
  } catch {
    valid = false;
  }
  if (!valid) throw notAuthenticated("ses", "the SNS signature does not verify");
}

/** The certificate names sns.amazonaws.com (or, in China, its own SNS host) in its SAN or subject. */
function issuedToSns(pem: string, url: URL): boolean {
  try {
    const cert = new X509Certificate(pem);
    return !!(cert.checkHost(SNS_CERTIFICATE_NAME) || (url.hostname.endsWith(".cn") && cert.checkHost(url.hostname)));
  } catch {
    return false;
  }
}

const MAX_CERTIFICATE_BYTES = 16 * 1024;
/** How long a failed certificate fetch is remembered: forged notifications naming new URLs do not each reach AWS. */
const FAILED_FETCH_CACHE_MS = 60_000;
const FETCH_TIMEOUT_MS = 10_000;

/**
 * SNS signing certificates over HTTPS (Node's TLS checks that the host really is SNS's),
 * cached by URL for a day: SNS signs with few certificates and rotates them rarely. A failed
 * fetch is remembered for a minute (then tried again): a stream of forged notifications
 * naming new certificate URLs makes at most one fetch per URL a minute.
 */
export class HttpsSigningCertificates implements SigningCertificates {
  private readonly cache = new LRUCache<string, Promise<string>>({ max: 256, ttl: 24 * 3600_000 });

  constructor(private readonly fetchPem: (url: URL) => Promise<string> = fetchCertificate) {}

  get(url: URL): Promise<string> {
    const key = url.href;
    let pending = this.cache.get(key);
    if (!pending) {
      pending = this.fetchPem(url);
      this.cache.set(key, pending);
      pending.catch(() => this.cache.set(key, pending!, { ttl: FAILED_FETCH_CACHE_MS }));
    }
    return pending;
  }
}

async function fetchCertificate(url: URL): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    throw unavailable("service_unavailable", `SNS signing certificate ${url.href} could not be fetched: ${(err as Error).message}`);
  }
  const pem = await res.text();
  if (!res.ok || pem.length > MAX_CERTIFICATE_BYTES || !pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw unavailable("service_unavailable", `SNS signing certificate ${url.href} answered ${res.status} without a certificate`);
  }
  return pem;
}

/**
 * Tests only (MAILROOM_TEST_SNS_SIGNING_CERT_FILE, read at start): every SigningCertURL that
 * passes the host rule is served by this PEM, so a suite signs with its own key and never
 * reaches AWS. Only the fetch is replaced: the host, path and certificate-name checks still apply.
 */
export class FixedSigningCertificate implements SigningCertificates {
  constructor(private readonly pem: string) {}
  get(): Promise<string> {
    return Promise.resolve(this.pem);
  }
}

/** Confirms a subscription by GETting its SubscribeURL (SNS answers 200 with the subscription's ARN). */
export class HttpsSubscriptionConfirmer implements SubscriptionConfirmer {
  async confirm(url: URL): Promise<void> {
    let res: Response;
    try {
      res = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    } catch (err) {
      throw unavailable("service_unavailable", `SNS subscription confirmation failed: ${(err as Error).message}`);
    }
    await res.arrayBuffer();
    if (!res.ok) throw unavailable("service_unavailable", `SNS subscription confirmation answered ${res.status}`);
  }
}
