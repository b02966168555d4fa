import nodemailer from "nodemailer";
import type { CaptureStore } from "./capture.js";
import { MessageBytes } from "./message-bytes.js";
import { bodyText, buildMime } from "./mime.js";
import { parseSmtpUrl, type SmtpClientOptions } from "./smtp-client.js";
import { SmtpPool } from "./smtp-pool.js";
import { smtpAttempt } from "./smtp-span.js";
import type { MailTransport, OutgoingMail, SendResult } from "../domain/ports.js";

/** Kept here for the code and tests that import it from this module. */
export { signWhole } from "./message-bytes.js";

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
  const { from, to, others } = mail.envelope;
  return { envelope: { from, to: [to, ...(others ?? [])] }, raw: buildMime(mail), dkim: mail.dkim };
}

/**
 * The relay transport: up to `poolSize` connections to the relay in MAILROOM_SMTP_URL
 * (smtp-pool.ts), each retired after `maxMessagesPerConnection` messages; a send waits for a
 * free one. The message's bytes come from MessageBytes (built, from a broadcast's skeleton,
 * DKIM-signed).
 */
export class SmtpPoolTransport implements MailTransport {
  readonly capturing = false;
  readonly description: string;
  private readonly bytes: MessageBytes;
  private readonly pool: SmtpPool;

  constructor(opts: SmtpOptions, description: string) {
    this.description = description;
    const client: SmtpClientOptions = {
      ...parseSmtpUrl(opts.url),
      timeoutMs: opts.timeoutMs,
      tlsRejectUnauthorized: opts.tlsRejectUnauthorized,
      requireTls: opts.requireTls,
      ignoreTls: opts.ignoreTls,
    };
    this.bytes = new MessageBytes(opts.skeletonCacheEntries);
    this.pool = new SmtpPool(client, { poolSize: opts.poolSize, maxMessagesPerConnection: opts.maxMessagesPerConnection });
  }

  async send(mail: OutgoingMail): Promise<SendResult> {
    const raw = await this.bytes.of(mail);
    const relay = this.pool.client;
    const reply = await smtpAttempt({ host: relay.host, port: relay.port }, mail.meta, () =>
      this.pool.send(mail.envelope.from, [mail.envelope.to, ...(mail.envelope.others ?? [])], raw),
    );
    const refused = reply.refused.map((r) => ({ address: r.address, code: r.reply.code, text: r.reply.text }));
    return refused.length ? { code: reply.code, response: reply.text, refused } : { code: reply.code, response: reply.text };
  }

  async close(): Promise<void> {
    await this.pool.close();
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
