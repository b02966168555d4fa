import { createPrivateKey, type KeyObject } from "node:crypto";
import DKIM from "nodemailer/lib/dkim";
import dkimSign from "nodemailer/lib/dkim/sign";
import { LRUCache } from "lru-cache";
import { relaxedBodyHash } from "./dkim-body.js";
import { buildMime } from "./mime.js";
import { MessageSkeletons } from "./mime-skeleton.js";
import type { OutgoingMail } from "../domain/ports.js";

type Dkim = NonNullable<OutgoingMail["dkim"]>;

/** Collects a signer's output: a transactional message is signed whole before it is queued. */
async function signed(signer: DKIM, raw: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw) as AsyncIterable<Buffer | string>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

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

/**
 * The bytes of an outgoing message, as any SMTP transport sends them: built by buildMime()
 * (a broadcast's from its skeleton, mime-skeleton.ts, signed there) and DKIM-signed here —
 * whole with signWhole when it carries attachments, else with nodemailer's signer.
 */
export class MessageBytes {
  /** DKIM signers by key, least recently used dropped past 256 (a signer holds a parsed private key). */
  private readonly signers = new LRUCache<string, DKIM>({ max: 256 });
  private readonly keys = new LRUCache<string, KeyObject>({ max: 256 });
  private readonly skeletons?: MessageSkeletons;

  /** `skeletonCacheEntries`: broadcast skeletons kept; 0 builds every message from scratch. */
  constructor(skeletonCacheEntries = 0) {
    if (skeletonCacheEntries) this.skeletons = new MessageSkeletons(skeletonCacheEntries);
  }

  async of(mail: OutgoingMail): Promise<Buffer> {
    // A broadcast's message comes signed from its skeleton; any other is built and signed here.
    const fromSkeleton = this.skeletons?.render(mail);
    if (fromSkeleton) return fromSkeleton;
    const raw = buildMime(mail);
    if (!mail.dkim) return raw;
    return mail.attachments?.length ? signWhole(raw, mail.dkim, this.key(mail.dkim)) : signed(this.signer(mail.dkim), raw);
  }

  /** Parsed keys for signWhole, kept as the signers are. */
  private key(d: Dkim): KeyObject {
    let key = this.keys.get(d.privateKey);
    if (!key) this.keys.set(d.privateKey, (key = createPrivateKey(d.privateKey)));
    return key;
  }

  /** Signers are kept per key: parsing a PEM key for every message costs more than signing. */
  private signer(d: Dkim): DKIM {
    const id = `${d.domainName}\u0000${d.keySelector}\u0000${d.headerFieldNames}\u0000${d.privateKey}`;
    let signer = this.signers.get(id);
    if (!signer) {
      signer = new DKIM({ ...d, privateKey: createPrivateKey(d.privateKey) });
      this.signers.set(id, signer);
    }
    return signer;
  }
}
