import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import PostalMime from "postal-mime";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailService, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "@mailroom/proto/common/v1/common_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * What an email can carry (issue 28, DESIGN §9.5), in the email service: its EmailService called
 * over Connect at the email unit's port (as the gateway and the SMTP submission unit call it),
 * against the real processes (accounts, audience, renderer, email, delivery), nats-server and an SMTP sink.
 */

const WS = "ws_carry";
const bootstrap = {
  workspaces: [
    {
      id: WS, name: "Carry", timezone: "UTC",
      apiKeys: [{ key: "mr_test_carry_1", scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
      monthlyLimit: 10_000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("cc, bcc, headers, attachments and tags through the email service", () => {
  let sys: TestSystem;
  let email: ReturnType<typeof connectClient<typeof EmailService>>;
  let accounts: ReturnType<typeof connectClient<typeof AccountsService>>;
  let contacts: ReturnType<typeof connectClient<typeof ContactService>>;
  let seq = 0;
  const rcpt = (tag: string) => `${tag}-${++seq}-${randomBytes(3).toString("hex")}@example.test`;
  const used = async () => Number((await accounts.getUsage({ workspaceId: WS })).used);

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "email", "delivery"] });
    email = connectClient(EmailService, `http://127.0.0.1:${sys.ports.email}`);
    accounts = connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
  });

  it("keeps the fields on the record, counts every recipient, serves the attachment's bytes and lists by tag", async () => {
    const [to, cc, bcc] = [rcpt("to"), rcpt("cc"), rcpt("bcc")];
    const pdf = randomBytes(200 * 1024);
    const logo = randomBytes(1024);
    const before = await used();
    const { email: record } = await email.sendEmail({
      workspaceId: WS,
      email: {
        to,
        content: { case: "raw", value: { from: "Acme <team@acme.test>", subject: "Your invoice", html: '<p>Invoice <img src="cid:logo@acme"></p>' } },
        cc: [`Carl Copy <${cc}>`],
        bcc: [bcc],
        headers: [{ name: "X-Order", value: "A-1042" }],
        attachments: [
          { filename: "invoice.pdf", content: pdf },
          { filename: "logo.png", content: logo, contentId: "logo@acme" },
        ],
        tags: [{ name: "kind", value: "invoice" }, { name: "plan", value: "pro" }],
      },
    });
    expect(record).toBeDefined();
    expect(record!.status).toBe(EmailStatus.SENT);
    expect(record!.cc).toEqual([`Carl Copy <${cc}>`]);
    expect(record!.bcc).toEqual([bcc]);
    expect(record!.headers.map((h) => [h.name, h.value])).toEqual([["X-Order", "A-1042"]]);
    expect(record!.tags.map((t) => `${t.name}:${t.value}`)).toEqual(["kind:invoice", "plan:pro"]);
    expect(record!.attachments.map((a) => [a.filename, a.contentType, Number(a.size), a.contentId])).toEqual([
      ["invoice.pdf", "application/pdf", pdf.length, ""],
      ["logo.png", "image/png", logo.length, "logo@acme"],
    ]);
    expect(await used()).toBe(before + 3);

    const { email: again } = await email.getEmail({ workspaceId: WS, id: record!.id });
    expect(again!.attachments).toHaveLength(2);

    // One SMTP transaction for to, cc and bcc (delivery's part of issue 28).
    const [message] = await waitForMail(to);
    expect(new Set(message!.to)).toEqual(new Set([to, cc, bcc]));
    const parsed = await PostalMime.parse(message!.raw);
    expect(parsed.cc?.map((a) => a.address)).toEqual([cc]);
    expect(message!.raw).not.toMatch(/^bcc:/im);

    // Bytes for the console's download, kept after delivery (the content's retention).
    const file = await email.getEmailAttachment({ workspaceId: WS, id: record!.id, index: 0 });
    expect(file.attachment?.filename).toBe("invoice.pdf");
    expect(Buffer.from(file.content).equals(pdf)).toBe(true);
    await expect(email.getEmailAttachment({ workspaceId: WS, id: record!.id, index: 5 })).rejects.toThrow(/no attachment 5/);
    await expect(email.getEmailAttachment({ workspaceId: "ws_nobody", id: record!.id, index: 0 })).rejects.toThrow(/not found/);

    const tagged = await email.listEmails({ workspaceId: WS, tags: ["kind:invoice", "plan:pro"], limit: 10 });
    expect(tagged.emails.map((e) => e.id)).toEqual([record!.id]);
    expect((await email.listEmails({ workspaceId: WS, tags: ["kind:receipt"], limit: 10 })).emails).toEqual([]);

    const day = new Date().toISOString().slice(0, 10);
    let stats = await email.getStats({ workspaceId: WS, from: day, to: day, tags: ["kind:invoice"] });
    for (let i = 0; i < 100 && Number(stats.totals?.delivered ?? 0) < 1; i++) {
      await sleep(100);
      stats = await email.getStats({ workspaceId: WS, from: day, to: day, tags: ["kind:invoice"] });
    }
    expect(Number(stats.totals?.sent)).toBe(1);
    expect(Number(stats.totals?.delivered)).toBe(1);
    expect(Number((await email.getStats({ workspaceId: WS, from: day, to: day, tags: ["kind:receipt"] })).totals?.sent)).toBe(0);
  });

  it("leaves a suppressed cc out of the envelope, lists it on the record and does not count it", async () => {
    const [to, cc, bcc] = [rcpt("to"), rcpt("gone"), rcpt("bcc")];
    await contacts.addSuppression({ workspaceId: WS, email: cc, reason: SuppressionReason.HARD_BOUNCE });
    const before = await used();
    const { email: record } = await email.sendEmail({
      workspaceId: WS,
      email: { to, content: { case: "raw", value: { from: "team@acme.test", subject: "Hi", html: "<p>Hi</p>" } }, cc: [cc], bcc: [bcc] },
    });
    expect(record!.status).toBe(EmailStatus.SENT);
    expect(record!.suppressed.map((s) => [s.email, s.reason])).toEqual([[cc, "hard bounce"]]);
    expect(await used()).toBe(before + 2);
    const [message] = await waitForMail(to);
    expect(new Set(message!.to)).toEqual(new Set([to, bcc]));
  });

  it("refuses what the contract refuses, with its code, and counts nothing", async () => {
    const before = await used();
    const base = { to: rcpt("no"), content: { case: "raw" as const, value: { from: "team@acme.test", subject: "Hi", html: "<p>Hi</p>" } } };
    const refusals: Array<[string, object]> = [
      ["header_not_allowed", { headers: [{ name: "Bcc", value: "spy@evil.test" }] }],
      ["attachment_type_not_allowed", { attachments: [{ filename: "setup.exe", content: new Uint8Array(4) }] }],
      ["attachments_too_large", { attachments: [{ filename: "big.pdf", content: new Uint8Array(10 * 1024 * 1024 + 1) }] }],
      ["too_many_recipients", { cc: Array.from({ length: 50 }, (_, i) => `c${i}@example.test`) }],
      ["invalid_tags", { tags: [{ name: "kind", value: "not ok" }] }],
    ];
    for (const [code, extra] of refusals) {
      const err = await email.sendEmail({ workspaceId: WS, email: { ...base, ...extra } }).then(() => undefined, (e: unknown) => e);
      // The ErrorInfo detail carries the code and status the gateway answers with.
      const [info] = ConnectError.from(err).findDetails(ErrorInfoSchema);
      expect([info?.code, info?.httpStatus], code).toEqual([code, 400]);
    }
    expect(await used()).toBe(before);
  });

  async function waitForMail(to: string, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const found = sys.sink!.messages.filter((m) => m.to.includes(to));
      if (found.length) return found;
      await sleep(100);
    }
    throw new Error(`no mail for ${to}\n${await sys.log("delivery")}`);
  }
});
