import { generateKeyPairSync } from "node:crypto";
import { Readable } from "node:stream";
import { text as streamText } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { dkimVerify } from "mailauth";
import PostalMime from "postal-mime";
import DKIM from "nodemailer/lib/dkim";
import RelaxedBody from "nodemailer/lib/dkim/relaxed-body";
import { buildMail, contentVersionOf } from "../domain/message.js";
import type { OutgoingMail, SenderCheck } from "../domain/ports.js";
import { compiledFrom, testJob } from "../testing.js";
import { relaxedBodyHash } from "./dkim-body.js";
import { RendererMerger } from "./merger.js";
import { buildMime } from "./mime.js";
import { MessageSkeleton, MessageSkeletons } from "./mime-skeleton.js";

const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const dkimTxt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`;
const resolver = async (name: string, type: string) => {
  if (type === "TXT" && name === "mr2024._domainkey.acme.test") return [[dkimTxt]];
  throw Object.assign(new Error(`no ${type} for ${name}`), { code: "ENOTFOUND" });
};
const sender: SenderCheck = {
  allowed: true,
  address: "news@acme.test",
  name: "",
  dkim: { domain: "acme.test", selector: "mr2024", privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
};
const merger = new RendererMerger();
const ctx = { secret: "skeleton-test-secret-0123456789abcdef", publicUrl: "https://mail.acme.test" };

const RECIPIENTS = [
  { email: "ann@example.test", variables: { firstName: "Ann" } },
  { email: "zoe@example.test", variables: { firstName: "Zoë ❤" } },
  { email: "bob@bücher.test", variables: { firstName: "Bob  with   spaces\tand tab " } },
  { email: "long@example.test", variables: { firstName: "x".repeat(1200) } },
];

/** The broadcast mail of each recipient, merged as the deliverer does. */
function mails(content: { subject: string; html: string; text?: string }, over: { fromName?: string; replyTo?: string; dkim?: boolean } = {}): OutgoingMail[] {
  const compiled = compiledFrom({ ...content, broadcast: true, workspaceId: "ws_test" });
  return RECIPIENTS.map((r, i) => {
    const job = testJob({
      source: "broadcast", broadcastId: "cmp_1", contentRef: "broadcast:cmp_1", fromName: over.fromName ?? "Café Ünïcode",
      replyTo: over.replyTo ?? "", recipient: { email: r.email, contactId: `ctc_${i}`, variables: r.variables },
    });
    const merged = merger.merge(compiled, { email: r.email, contactId: `ctc_${i}`, messageId: job.messageId, variables: r.variables }, ctx);
    // With a List-Unsubscribe pair long enough to be folded (the recipient token).
    return buildMail(job, merged, over.dkim === false ? { ...sender, dkim: undefined } : sender, contentVersionOf(compiled));
  });
}

/** Today's path: the message built from scratch, signed by nodemailer's DKIM signer. */
async function fromScratch(mail: OutgoingMail, date: Date): Promise<Buffer> {
  const raw = buildMime(mail, date);
  if (!mail.dkim) return raw;
  const signer = new DKIM({ ...mail.dkim });
  return Buffer.from(await streamText(signer.sign(raw)), "utf8");
}

/** What a reader sees: headers (the boundary and signature aside) and the decoded parts. */
async function reading(raw: Buffer) {
  const parsed = await PostalMime.parse(raw);
  const headers = parsed.headers
    .filter((h) => h.key !== "dkim-signature")
    .map((h) => `${h.key}: ${h.value.replace(/=_mr_[0-9a-z_]+/g, "=_mr_X")}`);
  return { headers, subject: parsed.subject, from: parsed.from, to: parsed.to, html: parsed.html, text: parsed.text };
}

/**
 * The raw message with the boundary blanked and the signature's b= value left out (and
 * its bh=, which covers the boundary; the single-part test below compares it).
 */
const comparable = (raw: Buffer) =>
  raw.toString("latin1").replace(/=_mr_[0-9a-z_]+/g, "=_mr_X").replace(/ bh=[A-Za-z0-9+/=]+;/, " bh=…;").replace(/(DKIM-Signature:[\s\S]*?b=)[A-Za-z0-9+/=\r\n ]+?(\r\n(?![ \t]))/, "$1…$2");

const CONTENTS = {
  "per-recipient bodies": { subject: "Hello {{firstName}}", html: "<p>Hi {{firstName}},</p>\n<p>news  inside</p>", text: "Hi {{firstName}}\nnews" },
  "static bodies": { subject: "Grüße aus Köln — ein sehr langer Betreff, der gefaltet werden muss ✓", html: "<p>Same for everyone ❤</p>", text: "Same for everyone" },
  "static HTML only": { subject: "Plain", html: "<p>one part</p>", text: "" },
  "static text, merged HTML": { subject: "Mixed", html: "<p>{{firstName}}</p>", text: "the same text\r\nfor all" },
};

describe("MessageSkeleton", () => {
  const date = new Date("2030-01-02T03:04:05Z");
  for (const [name, content] of Object.entries(CONTENTS)) {
    it(`builds what the from-scratch path builds, DKIM verifying for every recipient: ${name}`, async () => {
      const all = mails(content, { replyTo: '"Support, Team" <help@acme.test>' });
      const skeleton = new MessageSkeleton(all[0]);
      for (const mail of all) {
        const fast = skeleton.render(mail, date);
        const reference = await fromScratch(mail, date);
        expect(await reading(fast)).toEqual(await reading(reference));
        const verified = await dkimVerify(fast, { resolver });
        expect(verified.results.map((r) => r.status.result)).toEqual(["pass"]);
        // Byte for byte the same message, but for the boundary and the signature's value.
        expect(comparable(fast)).toBe(comparable(reference));
      }
    });
  }

  it("signs exactly the headers and body hash nodemailer's signer does", async () => {
    // One part: no boundary (it differs between the two paths, and so would the body hash).
    const [mail] = mails({ subject: "Hi {{firstName}}", html: "<p>Hi {{firstName}},</p>\n<p>news  inside </p>\n\n", text: "" });
    const fast = new MessageSkeleton(mail).render(mail, date).toString("latin1");
    const reference = (await fromScratch(mail, date)).toString("latin1");
    const tags = (raw: string) => {
      const sig = raw.split("\r\n\r\n")[0].split(/\r\n(?![ \t])/).find((l) => l.startsWith("DKIM-Signature:")) ?? "";
      const unfolded = sig.replace(/\r\n[ \t]+/g, " ");
      return Object.fromEntries(unfolded.slice(16).split(";").map((t) => t.trim().split(/=(.*)/s).slice(0, 2)).filter(([k]) => k !== "b"));
    };
    expect(tags(fast)).toEqual(tags(reference));
  });

  it("keeps the encoded static parts and reuses them for the next recipient; merged parts are encoded per recipient", () => {
    const all = mails(CONTENTS["static text, merged HTML"], { dkim: false });
    const skeleton = new MessageSkeleton(all[0]);
    const [a, b] = all.map((m) => skeleton.render(m, date).toString());
    const textPart = (raw: string) => /text\/plain[\s\S]*?\r\n\r\n([\s\S]*?)\r\n--/.exec(raw)?.[1];
    expect(textPart(a)).toBe("the same text\r\nfor all");
    expect(textPart(b)).toBe(textPart(a));
    expect(a).toContain("<p>Ann</p>");
    expect(b).not.toContain("<p>Ann</p>");
  });

  it("is rebuilt when the sender changes, and only broadcast mail has one", () => {
    const skeletons = new MessageSkeletons(8);
    const [first] = mails(CONTENTS["static bodies"]);
    skeletons.render(first, date);
    skeletons.render(first, date);
    expect(skeletons.built).toBe(1);
    const [renamed] = mails(CONTENTS["static bodies"], { fromName: "Other Name" });
    const raw = skeletons.render({ ...first, from: renamed.from }, date)!.toString();
    expect(raw).toMatch(/^From: Other Name <news@acme\.test>$/m);
    expect(skeletons.built).toBe(2);
    expect(skeletons.render({ ...first, skeleton: undefined }, date)).toBeUndefined();
  });
});

describe("relaxedBodyHash", () => {
  /** nodemailer's streaming canonicalization, the reference. */
  const reference = async (body: Buffer) => {
    const relaxed = new RelaxedBody({ hashAlgo: "sha256" });
    const hash = new Promise<string>((resolve) => relaxed.once("hash", resolve));
    Readable.from([body]).pipe(relaxed).resume();
    return hash;
  };

  it("equals nodemailer's hash for canonical bodies and for any mix of spaces, tabs and line breaks", async () => {
    const bodies = ["", "a", "a\r\n", "a\r\n\r\n\r\n", "\r\n", "a b\r\nc  d\r\n", "a \r\nb\t\r\n", " \r\n", "x\r\n \r\n", "a\nb\rc\r", "a\r\n\r\nb", " lead\r\n"];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let n = 0; n < 300; n++) {
      const alphabet = ["a", "b", " ", "\t", "\r", "\n", "\r\n", "é"];
      bodies.push(Array.from({ length: Math.floor(rand() * 40) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join(""));
    }
    for (const body of bodies) {
      const bytes = Buffer.from(body);
      expect(relaxedBodyHash(bytes), JSON.stringify(body)).toBe(await reference(bytes));
    }
  });
});
