import { createPrivateKey, type KeyObject } from "node:crypto";
import nodemailer from "nodemailer";
import DKIM from "nodemailer/lib/dkim";
import dkimSign from "nodemailer/lib/dkim/sign";
import { LRUCache } from "lru-cache";
import type { CaptureStore } from "./capture.js";
import { relaxedBodyHash } from "./dkim-body.js";
import { bodyText, buildMime } from "./mime.js";
import { MessageSkeletons } from "./mime-skeleton.js";
import { parseSmtpUrl, SmtpConnection, type SmtpClientOptions } from "./smtp-client.js";
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
  const { from, to, others } = mail.envelope;
  return { envelope: { from, to: [to, ...(others ?? [])] }, raw: buildMime(mail), dkim: mail.dkim };
}

/** Collects a signer's output: a transactional message is signed whole before it is queued. */
async function signed(signer: DKIM, raw: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw) as AsyncIterable<Buffer | string>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

type Dkim = NonNullable<OutgoingMail["dkim"]>;

/**
 * A whole message signed as nodemailer's signer signs it (the same header list, relaxed
 * canonicalization and key: byte for byte its output), the body hashed natively in one pass
 * (dkim-body.ts). For a message with attachments — megabytes of base64 — the signer's
 * JavaScript stream held the event loop for 0.2–0.7 s per 10 MB; this takes a few ms.
 * Unsigned, as the signer leaves it, when signing fails.
 */
export function signWhole(raw: Buffer, d: Dkim, key: KeyObject): Buffer {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.subarray(0, split < 0 ? raw.length : split).toString("latin1");
  const body = split < 0 ? Buffer.alloc(0) : raw.subarray(split + 4);
  const lines = head.split(/\r\n(?![ \t])/).map((line) => ({ key: line.slice(0, line.indexOf(":")).trim().toLowerCase(), line }));
  const field = dkimSign(lines, "sha256", relaxedBodyHash(body), {
    domainName: d.domainName,
    keySelector: d.keySelector,
    privateKey: key,
    headerFieldNames: d.headerFieldNames,
  });
  return field ? Buffer.concat([Buffer.from(`${field}\r\n`), raw]) : raw;
}

interface Waiting {
  resolve(conn: SmtpConnection): void;
  reject(err: Error): void;
}

/**
 * Up to `poolSize` connections to the relay in MAILROOM_SMTP_URL (smtp-client.ts, with
 * PIPELINING), each retired after `maxMessagesPerConnection` messages; a send waits for a
 * free one. The message is built by buildMime() (a broadcast's from its skeleton,
 * mime-skeleton.ts, signed there) or signed here with nodemailer's DKIM signer. A message
 * whose connection turns out to have been closed by the relay while idle, before any reply
 * to it, is sent once more on a new connection.
 */
export class SmtpPoolTransport implements MailTransport {
  readonly capturing = false;
  readonly description: string;
  /** DKIM signers by key, least recently used dropped past 256 (a signer holds a parsed private key). */
  private readonly signers = new LRUCache<string, DKIM>({ max: 256 });
  private readonly keys = new LRUCache<string, KeyObject>({ max: 256 });
  private readonly skeletons?: MessageSkeletons;
  private readonly client: SmtpClientOptions;
  private readonly idle: SmtpConnection[] = [];
  private readonly live = new Set<SmtpConnection>();
  private opening = 0;
  private readonly waiting: Waiting[] = [];
  private closing = false;

  constructor(private readonly opts: SmtpOptions, description: string) {
    this.description = description;
    this.client = {
      ...parseSmtpUrl(opts.url),
      timeoutMs: opts.timeoutMs,
      tlsRejectUnauthorized: opts.tlsRejectUnauthorized,
      requireTls: opts.requireTls,
      ignoreTls: opts.ignoreTls,
    };
    if (opts.skeletonCacheEntries) this.skeletons = new MessageSkeletons(opts.skeletonCacheEntries);
  }

  async send(mail: OutgoingMail): Promise<SendResult> {
    // A broadcast's message comes signed from its skeleton; any other is built and signed here.
    const fromSkeleton = this.skeletons?.render(mail);
    let raw = fromSkeleton ?? buildMime(mail);
    if (!fromSkeleton && mail.dkim) {
      raw = mail.attachments?.length ? signWhole(raw, mail.dkim, this.key(mail.dkim)) : await signed(this.signer(mail.dkim), raw);
    }
    const to = [mail.envelope.to, ...(mail.envelope.others ?? [])];
    for (let attempt = 0; ; attempt++) {
      const conn = await this.acquire();
      const reused = conn.sent > 0;
      try {
        const reply = await conn.send(mail.envelope.from, to, raw);
        const refused = reply.refused.map((r) => ({ address: r.address, code: r.reply.code, text: r.reply.text }));
        return refused.length ? { code: reply.code, response: reply.text, refused } : { code: reply.code, response: reply.text };
      } catch (err) {
        // Closed by the relay while idle, noticed only now: nothing of this message was answered.
        if (attempt === 0 && reused && err instanceof SmtpFailure && err.code === 0 && !conn.answered) continue;
        throw err;
      } finally {
        this.release(conn);
      }
    }
  }

  private acquire(): Promise<SmtpConnection> {
    if (this.closing) return Promise.reject(new SmtpFailure("delivery is shutting down", 0, false));
    for (let conn = this.idle.pop(); conn; conn = this.idle.pop()) if (!conn.closed) return Promise.resolve(conn);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.grow();
    });
  }

  /** Opens connections for waiting sends while the pool has room. */
  private grow(): void {
    while (this.waiting.length > this.opening && this.live.size + this.opening < this.opts.poolSize) {
      this.opening += 1;
      let conn: SmtpConnection | undefined;
      SmtpConnection.open(this.client, () => this.forget(conn))
        .then((opened) => {
          conn = opened;
          this.opening -= 1;
          this.live.add(opened);
          this.release(opened);
        })
        .catch((err: Error) => {
          this.opening -= 1;
          // With no connection left, every waiting send learns why (the relay refused, timed
          // out); otherwise one does and the rest wait for the connections still open.
          if (this.live.size === 0 && this.opening === 0) for (const w of this.waiting.splice(0)) w.reject(err);
          else this.waiting.shift()?.reject(err);
        });
    }
  }

  private release(conn: SmtpConnection): void {
    if (conn.closed || conn.sent >= this.opts.maxMessagesPerConnection || this.closing) {
      this.forget(conn);
      void conn.quit();
      return;
    }
    const next = this.waiting.shift();
    if (next) next.resolve(conn);
    else this.idle.push(conn);
  }

  private forget(conn: SmtpConnection | undefined): void {
    if (!conn || !this.live.delete(conn)) return;
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
    this.grow();
  }

  /** Parsed keys for signWhole, kept as the signers are. */
  private key(d: Dkim): KeyObject {
    let key = this.keys.get(d.privateKey);
    if (!key) this.keys.set(d.privateKey, (key = createPrivateKey(d.privateKey)));
    return key;
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
    this.closing = true;
    for (const w of this.waiting.splice(0)) w.reject(new SmtpFailure("delivery is shutting down", 0, false));
    await Promise.all(this.idle.splice(0).map((conn) => conn.quit()));
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
