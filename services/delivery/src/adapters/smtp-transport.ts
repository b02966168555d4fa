import { createPrivateKey } from "node:crypto";
import { Readable } from "node:stream";
import nodemailer from "nodemailer";
import DKIM from "nodemailer/lib/dkim";
import { LRUCache } from "lru-cache";
import type { CaptureStore } from "./capture.js";
import { bodyText, buildMime } from "./mime.js";
import { MessageSkeletons } from "./mime-skeleton.js";
import { SmtpFailure, type MailTransport, type OutgoingMail, type SendResult } from "../domain/ports.js";

export interface SmtpOptions {
  url: string;
  poolSize: number;
  maxMessagesPerConnection: number;
  timeoutMs: number;
  tlsRejectUnauthorized: boolean;
  requireTls: boolean;
  ignoreTls: boolean;
  /** Broadcast skeletons kept (mime-skeleton.ts); 0 builds every message from scratch. */
  skeletonCacheEntries?: number;
}

/**
 * nodemailer message options for one outgoing mail: the message is built by buildMime()
 * and handed over raw; nodemailer adds the DKIM signature and speaks SMTP.
 */
export function toNodemailer(mail: OutgoingMail) {
  return { envelope: mail.envelope, raw: buildMime(mail), dkim: mail.dkim };
}

const RECIPIENT_COMMANDS = new Set(["RCPT TO", "DATA"]);

function asSmtpFailure(err: unknown): SmtpFailure {
  const e = err as { message?: string; responseCode?: number; command?: string; response?: string };
  const code = typeof e?.responseCode === "number" ? e.responseCode : 0;
  const message = e?.response || e?.message || String(err);
  return new SmtpFailure(message, code, RECIPIENT_COMMANDS.has(e?.command ?? ""));
}

/** What nodemailer's SMTP pool reads from a queued message (its transport interface). */
interface PoolMessage {
  data: Record<string, unknown>;
  message: {
    getEnvelope(): { from: string; to: string[] };
    messageId(): string;
    getHeader(name: string): string | undefined;
    createReadStream(): Readable;
  };
}

interface SmtpPool {
  send(mail: PoolMessage, callback: (err: Error | null, info?: { response?: string }) => void): boolean;
}

/**
 * A pooled SMTP connection set to the relay in MAILROOM_SMTP_URL. The message is built
 * by buildMime() (a broadcast's from its skeleton, mime-skeleton.ts) and queued straight
 * onto nodemailer's SMTP pool (its transport interface: envelope, message id, a stream
 * per attempt), skipping the Mailer layer's per-message MIME tree and stream plumbing;
 * DKIM uses nodemailer's signer (a skeleton signs with nodemailer's signature function).
 */
export class SmtpPoolTransport implements MailTransport {
  readonly capturing = false;
  readonly description: string;
  private readonly mailer: ReturnType<typeof nodemailer.createTransport>;
  private readonly pool: SmtpPool;
  /** DKIM signers by key, least recently used dropped past 256 (a signer holds a parsed private key). */
  private readonly signers = new LRUCache<string, DKIM>({ max: 256 });
  private readonly skeletons?: MessageSkeletons;

  constructor(opts: SmtpOptions, description: string) {
    this.description = description;
    this.mailer = nodemailer.createTransport({
      url: opts.url,
      pool: true,
      maxConnections: opts.poolSize,
      maxMessages: opts.maxMessagesPerConnection,
      connectionTimeout: opts.timeoutMs,
      greetingTimeout: opts.timeoutMs,
      socketTimeout: opts.timeoutMs,
      requireTLS: opts.requireTls,
      ignoreTLS: opts.ignoreTls,
      tls: { rejectUnauthorized: opts.tlsRejectUnauthorized },
    } as Parameters<typeof nodemailer.createTransport>[0]);
    this.pool = (this.mailer as unknown as { transporter: SmtpPool }).transporter;
    if (opts.skeletonCacheEntries) this.skeletons = new MessageSkeletons(opts.skeletonCacheEntries);
  }

  send(mail: OutgoingMail): Promise<SendResult> {
    // A broadcast's message comes signed from its skeleton; any other is built and signed here.
    const fromSkeleton = this.skeletons?.render(mail);
    const raw = fromSkeleton ?? buildMime(mail);
    const signer = !fromSkeleton && mail.dkim && this.signer(mail.dkim);
    const envelope = { from: mail.envelope.from, to: [mail.envelope.to] };
    const queued: PoolMessage = {
      data: {},
      message: {
        getEnvelope: () => ({ from: envelope.from, to: [...envelope.to] }),
        messageId: () => mail.messageId,
        getHeader: (name) => (name.toLowerCase() === "message-id" ? mail.messageId : undefined),
        // A fresh stream per call: the pool may retry on another connection.
        createReadStream: () => (signer ? signer.sign(raw) : Readable.from([raw], { objectMode: false })),
      },
    };
    return new Promise((resolve, reject) => {
      this.pool.send(queued, (err, info) => {
        if (err) return reject(asSmtpFailure(err));
        const response = String(info?.response ?? "250 OK");
        resolve({ code: Number(/^\d{3}/.exec(response)?.[0] ?? 250), response });
      });
    });
  }

  /** Signers are kept per key: parsing a PEM key for every message costs more than signing. */
  private signer(d: NonNullable<OutgoingMail["dkim"]>): DKIM {
    const id = `${d.domainName}\u0000${d.keySelector}\u0000${d.headerFieldNames}\u0000${d.privateKey}`;
    let signer = this.signers.get(id);
    if (!signer) {
      signer = new DKIM({ ...d, privateKey: createPrivateKey(d.privateKey) });
      this.signers.set(id, signer);
    }
    return signer;
  }

  async close(): Promise<void> {
    this.mailer.close();
  }
}

/**
 * No relay configured: build the exact message (signed, as it would have gone out) and
 * keep it under <dataDir>/captured/ so it can be read in a browser.
 */
export class CaptureTransport implements MailTransport {
  readonly capturing = true;
  readonly description = "capture";
  private readonly builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" });

  constructor(private readonly store: CaptureStore) {}

  async send(mail: OutgoingMail): Promise<SendResult> {
    const info = (await this.builder.sendMail(toNodemailer(mail))) as { message: Buffer };
    await this.store.save({
      deliveryId: mail.meta.deliveryId,
      workspaceId: mail.meta.workspaceId,
      messageId: mail.messageId.replace(/^<|>$/g, ""),
      from: mail.from.name ? `${mail.from.name} <${mail.from.address}>` : mail.from.address,
      to: mail.to,
      subject: mail.subject,
      raw: info.message,
      html: bodyText(mail.html),
      text: bodyText(mail.text),
    });
    return { code: 250, response: "250 captured locally" };
  }

  async close(): Promise<void> {
    await this.store.flush();
  }
}
