import { createPublicKey, randomBytes } from "node:crypto";
import { dkimVerify } from "mailauth";
import { connectClient } from "@mailroom/kit/connect.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime, { type Email } from "postal-mime";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * What an email can carry (issue 28, DESIGN §9.5) through the public HTTP API, against the
 * real processes (accounts, audience, renderer, email, delivery, gateway), nats-server and the SMTP
 * sink: cc, bcc, custom headers, attachments and tags are accepted and shown on the record
 * (response, GET, list), each refusal is a clear 400 with nothing sent, a batch of 50 items
 * each with a 100 KB attachment fits the batch body, and the log filters by tag.
 */

const KEY = "mr_test_public_fields_1";
const bootstrap = {
  workspaces: [
    {
      id: "ws_fields", name: "Fields", timezone: "UTC",
      apiKeys: [{ key: KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const b64 = (b: Buffer) => b.toString("base64");
let seq = 0;
/** A fresh recipient per case, so what the sink holds for it is that case's mail only. */
const rcpt = (name: string) => `${name}-${++seq}@fields.test`;

describe("cc, bcc, headers, attachments and tags over the public API", () => {
  let sys: TestSystem;
  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY, body });
  const raw = (to: string, extra: Record<string, unknown> = {}) => ({ from: "Acme <billing@acme.test>", to, subject: "Your invoice", html: "<p>Invoice attached</p>", ...extra });

  async function mailTo(address: string, timeoutMs = 20_000): Promise<Email & { raw: string; envelope: string[] }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const msg = sys.sink!.messages.find((m) => m.to.includes(address));
      if (msg) return Object.assign(await PostalMime.parse(msg.raw), { raw: msg.raw, envelope: msg.to });
      if (Date.now() > deadline) throw new Error(`no mail to ${address} within ${timeoutMs} ms\n--- email ---\n${await sys.log("email")}\n--- delivery ---\n${await sys.log("delivery")}`);
      await sleep(50);
    }
  }
  const mailCount = (address: string) => sys.sink!.messages.filter((m) => m.to.includes(address)).length;

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"] });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("accepts each field, shows it on the record (response, GET, list) and delivers it", async () => {
    const to = rcpt("ann");
    const cc = rcpt("cc");
    const bcc = rcpt("bcc");
    const pdf = randomBytes(150 * 1024);
    const logo = randomBytes(2048);
    const res = await api("POST", "/v1/emails", raw(to, {
      html: '<p>Invoice attached</p><img src="cid:logo-1" alt="logo">',
      cc: `Bob <${cc}>`,
      bcc: [bcc],
      headers: { "X-Entity-Ref-ID": "inv-1042" },
      attachments: [
        { filename: "invoice.pdf", content: b64(pdf), contentType: "application/pdf" },
        { filename: "logo.png", content: b64(logo), contentType: "image/png", contentId: "logo-1" },
      ],
      tags: [{ name: "category", value: "invoice" }, { name: "customer_id", value: "c-42" }],
    }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const shown = {
      cc: [`Bob <${cc}>`],
      bcc: [bcc],
      headers: { "X-Entity-Ref-ID": "inv-1042" },
      tags: [{ name: "category", value: "invoice" }, { name: "customer_id", value: "c-42" }],
      attachments: [
        { filename: "invoice.pdf", contentType: "application/pdf", size: pdf.length },
        { filename: "logo.png", contentType: "image/png", size: logo.length, contentId: "logo-1" },
      ],
    };
    expect(res.body.email).toMatchObject(shown);
    const id = res.body.email.id as string;
    expect((await api("GET", `/v1/emails/${id}`)).body.email).toMatchObject(shown);
    const listed = await api("GET", `/v1/emails?recipient=${encodeURIComponent(to)}`);
    expect(listed.body.emails.items).toEqual([expect.objectContaining({ id, ...shown })]);

    // Delivered once, to every recipient of the envelope; the file arrives byte for byte.
    const mail = await mailTo(to);
    expect(mail.envelope.sort()).toEqual([to, cc, bcc].sort());
    const file = mail.attachments.find((a) => a.filename === "invoice.pdf");
    expect(file?.mimeType).toBe("application/pdf");
    expect(Buffer.from(file!.content as ArrayBuffer).equals(pdf)).toBe(true);
    const inline = mail.attachments.find((a) => a.contentId === "<logo-1>");
    expect(inline?.disposition).toBe("inline");
    expect(Buffer.from(inline!.content as ArrayBuffer).equals(logo)).toBe(true);
    expect(mail.cc?.map((a) => a.address)).toEqual([cc]);
    expect(mail.headers.find((h) => h.key === "x-entity-ref-id")?.value).toBe("inv-1042");
    expect(mail.headers.some((h) => h.key === "bcc")).toBe(false);

    // DKIM (the domain's key, as delivery got it from the accounts unit) covers the message with its attachments.
    const sender = await connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`).checkSender({ workspaceId: "ws_fields", from: "billing@acme.test" });
    expect(sender.dkim?.privateKeyPem).toBeTruthy();
    const publicKey = createPublicKey(sender.dkim!.privateKeyPem).export({ type: "spki", format: "der" }).toString("base64");
    const resolver = async (name: string, type: string) => {
      if (type === "TXT" && name === `${sender.dkim!.selector}._domainkey.${sender.dkim!.domain}`) return [[`v=DKIM1; k=rsa; p=${publicKey}`]];
      throw Object.assign(new Error(`no ${type} ${name}`), { code: "ENOTFOUND" });
    };
    const verified = await dkimVerify(Buffer.from(mail.raw), { resolver });
    expect(verified.results.map((r) => [r.signingDomain, r.status.result])).toEqual([["acme.test", "pass"]]);
    const tampered = mail.raw.replace(b64(pdf).slice(0, 76), `A${b64(pdf).slice(1, 76)}`);
    expect(tampered).not.toBe(mail.raw);
    expect((await dkimVerify(Buffer.from(tampered), { resolver })).results[0].status.result).not.toBe("pass");
  }, 60_000);

  it("refuses each rule with a clear 400 naming what is wrong, and sends nothing", async () => {
    const cases: Array<[string, (to: string) => Record<string, unknown>, string, RegExp]> = [
      ["a reserved header", (to) => raw(to, { headers: { "Return-Path": "x@evil.test" } }), "header_not_allowed", /Return-Path/i],
      ["a Content-* header", (to) => raw(to, { headers: { "content-type": "text/plain" } }), "header_not_allowed", /content-type/i],
      ["an executable attachment", (to) => raw(to, { attachments: [{ filename: "setup.exe", content: b64(randomBytes(64)) }] }), "attachment_type_not_allowed", /setup\.exe/],
      ["over 10 MB of attachments", (to) => raw(to, { attachments: [{ filename: "a.dat", content: b64(randomBytes(6 * 1024 * 1024)) }, { filename: "b.dat", content: b64(randomBytes(4 * 1024 * 1024 + 1)) }] }), "attachments_too_large", /10 MB/],
      ["51 recipients", (to) => raw(to, { cc: Array.from({ length: 25 }, (_, i) => `cc${i}@fields.test`), bcc: Array.from({ length: 25 }, (_, i) => `bcc${i}@fields.test`) }), "too_many_recipients", /50/],
      ["a tag with a space", (to) => raw(to, { tags: [{ name: "category", value: "big invoice" }] }), "invalid_tags", /tags\[0\]\.value.*letters, digits/],
      ["11 tags", (to) => raw(to, { tags: Array.from({ length: 11 }, (_, i) => ({ name: `t${i}`, value: "x" })) }), "invalid_tags", /10/],
      ["content that is not base64", (to) => raw(to, { attachments: [{ filename: "ok.txt", content: "aGk=" }, { filename: "bad.txt", content: "not base64!" }] }), "invalid_payload", /attachments\[1\]\.content/],
    ];
    const refused: string[] = [];
    for (const [name, body, code, message] of cases) {
      const to = rcpt("refused");
      refused.push(to);
      const res = await api("POST", "/v1/emails", body(to));
      expect(res.status, `${name}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(400);
      expect(res.body, name).toMatchObject({ statusCode: 400, code, message: expect.stringMatching(message), docsUrl: expect.stringContaining(`/docs/errors/${code}`) });
      // Alone in a batch, the item fails the same way and nothing else is refused.
      const batch = await api("POST", "/v1/emails/batch", { emails: [body(to)] });
      expect(batch.status, name).toBe(200);
      expect(batch.body.emails.successful, name).toEqual([]);
      expect(batch.body.emails.failed, name).toEqual([expect.objectContaining({ index: 0, statusCode: 400, code })]);
    }
    // A control email sent after them arrives; none of the refused ones did.
    const control = rcpt("control");
    expect((await api("POST", "/v1/emails", raw(control))).status).toBe(200);
    await mailTo(control);
    await sleep(300);
    for (const to of refused) expect(mailCount(to), to).toBe(0);
    expect((await api("GET", "/v1/emails?recipient=" + encodeURIComponent(refused[0]))).body.emails.items).toEqual([]);
  }, 90_000);

  it("answers malformed values with a 400 (never a 500) and sends nothing", async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ["a header name with a space", { headers: { "X-Bad Name": "v" } }],
      ["a header name with a colon", { headers: { "X-A:B": "v" } }],
      ["a header value with CR/LF", { headers: { "X-Ref": "a\r\nBcc: spy@evil.test" } }],
      ["a filename with CR/LF", { attachments: [{ filename: "a.txt\r\nX-Evil: 1", content: "aGk=" }] }],
      ["a content type with CR/LF", { attachments: [{ filename: "a.txt", content: "aGk=", contentType: "text/plain\r\nX-Evil: 1" }] }],
      ["an empty filename", { attachments: [{ filename: "", content: "aGk=" }] }],
      ["a malformed cc", { cc: "not an address" }],
      ["a malformed bcc", { bcc: ["ok@fields.test", "nope@"] }],
      ["an empty tag name", { tags: [{ name: "", value: "x" }] }],
      ["a 257-character tag value", { tags: [{ name: "n", value: "x".repeat(257) }] }],
    ];
    const refused: string[] = [];
    for (const [name, extra] of cases) {
      const to = rcpt("malformed");
      refused.push(to);
      const res = await api("POST", "/v1/emails", raw(to, extra));
      expect(res.status, `${name}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(400);
      expect(res.body.message, name).toEqual(expect.any(String));
    }
    const control = rcpt("control");
    expect((await api("POST", "/v1/emails", raw(control))).status).toBe(200);
    await mailTo(control);
    await sleep(300);
    for (const to of refused) expect(mailCount(to), to).toBe(0);
  }, 60_000);

  it("sends a batch of 50 items, each with a 100 KB attachment, inside the 25 MB body limit", async () => {
    const files = Array.from({ length: 50 }, () => randomBytes(100 * 1024));
    const recipients = files.map(() => rcpt("batch"));
    const body = { emails: recipients.map((to, i) => raw(to, { subject: `Report ${i}`, attachments: [{ filename: `report-${i}.pdf`, content: b64(files[i]), contentType: "application/pdf" }], tags: [{ name: "batch", value: "reports" }] })) };
    expect(JSON.stringify(body).length).toBeGreaterThan(50 * 130_000);
    const res = await api("POST", "/v1/emails/batch", body);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.emails.failed).toEqual([]);
    expect(res.body.emails.successful).toHaveLength(50);
    expect(res.body.emails.successful[3]).toMatchObject({ to: recipients[3], attachments: [{ filename: "report-3.pdf", size: 100 * 1024 }], tags: [{ name: "batch", value: "reports" }] });
    for (const i of [0, 49]) {
      const mail = await mailTo(recipients[i], 60_000);
      expect(Buffer.from(mail.attachments[0].content as ArrayBuffer).equals(files[i])).toBe(true);
    }
  }, 120_000);

  it("lists and counts emails by tag (every tag asked for must match)", async () => {
    const send = async (tags: Array<{ name: string; value: string }>) => {
      const res = await api("POST", "/v1/emails", raw(rcpt("tagged"), { tags }));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.email.id as string;
    };
    const a = await send([{ name: "flow", value: "onboarding" }, { name: "plan", value: "pro" }]);
    const b = await send([{ name: "flow", value: "onboarding" }, { name: "plan", value: "free" }]);
    await send([{ name: "flow", value: "billing" }]);
    const ids = async (query: string) => ((await api("GET", `/v1/emails?${query}`)).body.emails.items as Array<{ id: string }>).map((e) => e.id).sort();
    expect(await ids("tag=flow:onboarding")).toEqual([a, b].sort());
    expect(await ids("tag=flow:onboarding&tag=plan:pro")).toEqual([a]);
    expect(await ids("tag=flow:nothing")).toEqual([]);
    expect((await api("GET", "/v1/emails?tag=flow")).body).toMatchObject({ statusCode: 400, code: "invalid_request" });

    // Counted once delivered: the two onboarding emails, not the billing one.
    const deadline = Date.now() + 20_000;
    let stats = await api("GET", "/v1/stats/emails?tag=flow:onboarding");
    while (stats.body?.stats?.totals?.delivered !== 2 && Date.now() < deadline) {
      await sleep(200);
      stats = await api("GET", "/v1/stats/emails?tag=flow:onboarding");
    }
    expect(stats.status, JSON.stringify(stats.body)).toBe(200);
    expect(stats.body.stats).toMatchObject({ tags: ["flow:onboarding"], totals: { sent: 2, delivered: 2 } });
    expect((await api("GET", "/v1/stats/emails?tag=flow:onboarding&tag=plan:pro")).body.stats.totals).toMatchObject({ sent: 1 });
    expect((await api("GET", "/v1/stats/emails")).body.stats.totals.sent).toBeGreaterThan(2);
    expect((await api("GET", "/v1/stats/emails?tag=flow")).body).toMatchObject({ statusCode: 400, code: "invalid_request" });
  }, 60_000);
});
