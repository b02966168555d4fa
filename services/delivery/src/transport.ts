import nodemailer from "nodemailer";
import type { CaptureStore } from "./capture.js";
import { buildMime } from "./mime.js";
import { SmtpFailure, type MailTransport, type OutgoingMail, type SendResult } from "./repositories.js";

export interface SmtpOptions {
  url: string;
  poolSize: number;
  maxMessagesPerConnection: number;
  timeoutMs: number;
  tlsRejectUnauthorized: boolean;
  requireTls: boolean;
  ignoreTls: boolean;
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

/** A pooled SMTP connection set to the relay in MAILROOM_SMTP_URL. */
export class SmtpPoolTransport implements MailTransport {
  readonly capturing = false;
  readonly description: string;
  private readonly transport: ReturnType<typeof nodemailer.createTransport>;

  constructor(opts: SmtpOptions, description: string) {
    this.description = description;
    this.transport = nodemailer.createTransport({
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
  }

  async send(mail: OutgoingMail): Promise<SendResult> {
    try {
      const info = await this.transport.sendMail(toNodemailer(mail));
      const response = String((info as { response?: string }).response ?? "250 OK");
      return { code: Number(/^\d{3}/.exec(response)?.[0] ?? 250), response };
    } catch (err) {
      throw asSmtpFailure(err);
    }
  }

  async close(): Promise<void> {
    this.transport.close();
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
      html: mail.html,
      text: mail.text,
    });
    return { code: 250, response: "250 captured locally" };
  }

  async close(): Promise<void> {
    await this.store.flush();
  }
}
