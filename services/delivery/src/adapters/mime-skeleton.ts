import { createPrivateKey, type KeyObject } from "node:crypto";
import { LRUCache } from "lru-cache";
import dkimSign from "nodemailer/lib/dkim/sign";
import type { Body, OutgoingMail } from "../domain/ports.js";
import { relaxedBodyHash } from "./dkim-body.js";
import {
  bodyLength,
  bodyPart,
  closingDelimiter,
  formatAddress,
  header,
  htmlPartHead,
  mimeDate,
  multipartHeader,
  newBoundary,
  replyToHeader,
  singlePartHeaders,
  subjectHeader,
  textPartHead,
} from "./mime.js";

type Encoded = ReturnType<typeof bodyPart>;
type Cte = Encoded["cte"];
type Dkim = NonNullable<OutgoingMail["dkim"]>;

/**
 * A broadcast's message built once per (content, sender) and filled in per recipient:
 * the same layout and bytes as buildMime() (mime.ts) plus the DKIM signature nodemailer's
 * signer would add, without redoing what does not change between recipients.
 *
 * Built once: From and Reply-To, the MIME headers and part delimiters (one boundary per
 * skeleton), the parsed signing key. Reused while unchanged: the encoded Subject, the
 * encoded body parts and the DKIM body hash. A body is static when the merge hands back
 * the very bytes it handed back before (the content library returns a body without
 * per-recipient pieces as one shared buffer); a merged body is encoded and hashed per
 * recipient, its literal pieces having been encoded once by the byte merge already.
 * Per recipient: To, Message-ID, Date, the delivery id and List-Unsubscribe headers, the
 * merged bodies, and the signature over the headers.
 */
export class MessageSkeleton {
  private readonly fromLine: string;
  private readonly replyToLine?: string;
  private readonly boundary = newBoundary();
  private readonly signing?: Dkim & { key: KeyObject };
  private subject = { value: "", line: "" };
  /** The first encoding of each body, reused while the merge hands back the same bytes. */
  private readonly parts: { html?: { src: string | Buffer; part: Encoded }; text?: { src: string | Buffer; part: Encoded } } = {};
  /** Body hashes of the static bodies, by layout and transfer encodings. */
  private readonly staticHashes = new Map<string, string>();
  private readonly delimiters = new Map<string, { text: Buffer; html: Buffer; close: Buffer }>();

  constructor(private readonly shape: Pick<OutgoingMail, "from" | "replyTo" | "dkim">) {
    this.fromLine = header("From", formatAddress(shape.from.name, shape.from.address));
    if (shape.replyTo) this.replyToLine = replyToHeader(shape.replyTo);
    if (shape.dkim) this.signing = { ...shape.dkim, key: createPrivateKey(shape.dkim.privateKey) };
  }

  /** Whether this skeleton was built for the mail's sender (From, Reply-To, signing key). */
  fits(mail: OutgoingMail): boolean {
    const a = this.shape;
    const b = mail;
    return (
      a.from.name === b.from.name &&
      a.from.address === b.from.address &&
      [a.replyTo ?? []].flat().join(",") === [b.replyTo ?? []].flat().join(",") &&
      a.dkim?.domainName === b.dkim?.domainName &&
      a.dkim?.keySelector === b.dkim?.keySelector &&
      a.dkim?.headerFieldNames === b.dkim?.headerFieldNames &&
      a.dkim?.privateKey === b.dkim?.privateKey
    );
  }

  /** The message for one recipient, signed when the sender has a DKIM key. */
  render(mail: OutgoingMail, date = new Date()): Buffer {
    if (mail.subject !== this.subject.value) this.subject = { value: mail.subject, line: subjectHeader(mail.subject) };
    const lines: string[] = [this.fromLine, header("To", formatAddress("", mail.to))];
    if (this.replyToLine) lines.push(this.replyToLine);
    lines.push(this.subject.line, `Message-ID: ${mail.messageId}`, `Date: ${mimeDate(date)}`, "MIME-Version: 1.0");
    for (const h of mail.headers) lines.push(header(h.key, h.value));

    const html = this.encoded("html", mail.html);
    const text = bodyLength(mail.text) > 0 ? this.encoded("text", mail.text) : undefined;
    let body: Buffer[];
    if (!text) {
      lines.push(...singlePartHeaders(html.part.cte));
      body = [html.part.body];
    } else {
      lines.push(multipartHeader(this.boundary));
      const d = this.delimitersFor(text.part.cte, html.part.cte);
      body = [d.text, text.part.body, d.html, html.part.body, d.close];
    }
    const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`);
    const signature = this.signing && this.sign(lines, this.signing, () => {
      const bodyHash = () => relaxedBodyHash(body.length === 1 ? body[0] : Buffer.concat(body));
      if (!html.reused || (text && !text.reused)) return bodyHash();
      const layout = `${text ? text.part.cte : "-"}/${html.part.cte}`;
      let hash = this.staticHashes.get(layout);
      if (!hash) this.staticHashes.set(layout, (hash = bodyHash()));
      return hash;
    });
    return Buffer.concat(signature ? [signature, head, ...body] : [head, ...body]);
  }

  private encoded(which: "html" | "text", body: Body): { part: Encoded; reused: boolean } {
    const src = typeof body === "string" ? body : body.bytes;
    const known = this.parts[which];
    if (known && known.src === src) return { part: known.part, reused: true };
    const part = bodyPart(body);
    this.parts[which] ??= { src, part };
    return { part, reused: false };
  }

  private delimitersFor(textCte: Cte, htmlCte: Cte) {
    const key = `${textCte}/${htmlCte}`;
    let d = this.delimiters.get(key);
    if (!d) {
      d = {
        text: Buffer.from(textPartHead(this.boundary, textCte)),
        html: Buffer.from(htmlPartHead(this.boundary, htmlCte)),
        close: Buffer.from(closingDelimiter(this.boundary)),
      };
      this.delimiters.set(key, d);
    }
    return d;
  }

  /**
   * The DKIM-Signature header line (with its CRLF) as nodemailer's signer writes it, from
   * the header lines as written and the body hash; undefined when signing failed (the
   * signer then sends the message unsigned, and so does this).
   */
  private sign(lines: string[], signing: Dkim & { key: KeyObject }, bodyHash: () => string): Buffer | undefined {
    const parsed = lines.map((line) => ({
      key: line.slice(0, line.indexOf(":")).trim().toLowerCase(),
      // The signer reads header bytes one character per byte.
      line: /^[\x00-\x7f]*$/.test(line) ? line : Buffer.from(line).toString("latin1"),
    }));
    const field = dkimSign(parsed, "sha256", bodyHash(), {
      domainName: signing.domainName,
      keySelector: signing.keySelector,
      privateKey: signing.key,
      headerFieldNames: signing.headerFieldNames,
    });
    return field ? Buffer.from(`${field}\r\n`) : undefined;
  }
}

/**
 * Skeletons by the mail's skeleton id (the broadcast's content ref and loaded version)
 * and sender address, least recently used dropped first. Mail without a skeleton id
 * (transactional, test sends) is built from scratch by the caller.
 */
export class MessageSkeletons {
  private readonly cache: LRUCache<string, MessageSkeleton>;
  built = 0;

  constructor(maxEntries: number) {
    this.cache = new LRUCache({ max: Math.max(1, maxEntries) });
  }

  /** The signed message from the mail's skeleton, or undefined when the mail has none. */
  render(mail: OutgoingMail, date = new Date()): Buffer | undefined {
    if (!mail.skeleton) return undefined;
    const key = `${mail.skeleton}\u0000${mail.from.address}`;
    let skeleton = this.cache.get(key);
    if (!skeleton || !skeleton.fits(mail)) {
      skeleton = new MessageSkeleton(mail);
      this.cache.set(key, skeleton);
      this.built += 1;
    }
    return skeleton.render(mail, date);
  }
}
