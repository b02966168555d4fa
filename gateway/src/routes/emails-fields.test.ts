import { randomBytes } from "node:crypto";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import {
  EmailRecordSchema,
  EmailService,
  EmailStatus,
  type EmailInput,
  type EmailRecord,
  type GetStatsRequest,
  type ListEmailsRequest,
} from "@mailroom/proto/email/v1/email_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { memoryDirectory } from "../../../services/audience/src/testing.js";
import { directoryClients } from "./directory-clients.testing.js";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { ERROR_TABLE, SINGLE_EMAIL_BODY_LIMIT_BYTES } from "@mailroom/http/errors.js";
import { decodeBase64 } from "../schemas/email.js";
import { registerSendEmail } from "./emails.js";
import { registerSendBatch } from "./emails-batch.js";
import { registerGetEmail } from "./emails-get.js";
import { registerListEmails } from "./emails-list.js";
import { registerEmailStats } from "./stats.js";

/**
 * What an email carries (DESIGN §9.5) at the gateway: cc, bcc, headers, attachments (base64
 * decoded here into bytes) and tags reach the email service as EmailInput, the records show
 * them, the tag filters reach ListEmails and GetStats, the service's new refusals are 400s,
 * and the OpenAPI document describes it all. The email service is a stand-in that records
 * what it is asked (the real one is exercised in test/email/public-fields.test.ts).
 */

const KEY = { authorization: "Bearer mr_test_fields_unit_1" };
const FROM = "Acme <team@acme.test>";
const b64 = (b: Buffer | string) => Buffer.from(b).toString("base64");

/** The record the real service would answer for an input: what was given, attachments as metadata. */
function recordOf(input: EmailInput, n: number): EmailRecord {
  return create(EmailRecordSchema, {
    id: `trs_${String(n).padStart(26, "0")}`,
    messageId: `<${n}@acme.test>`,
    status: EmailStatus.SENT,
    to: input.to,
    type: input.content.case === "raw" ? "raw" : "templated",
    from: input.content.case === "raw" ? input.content.value.from : "",
    subject: input.content.case === "raw" ? input.content.value.subject : "",
    template: input.content.case === "templated" ? input.content.value.template : "",
    cc: input.cc,
    bcc: input.bcc,
    headers: input.headers,
    tags: input.tags,
    attachments: input.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType || "application/octet-stream", size: BigInt(a.content.byteLength), contentId: a.contentId })),
  });
}

/** The stand-in service's own checks, for the codes the gateway maps (the real rules live in the email service). */
function check(input: EmailInput): void {
  const refused = input.headers.find((h) => ["from", "bcc"].includes(h.name.toLowerCase()));
  if (refused) throw badRequest("header_not_allowed", `Header ${refused.name} is not allowed`);
  if (input.attachments.some((a) => a.filename.endsWith(".exe"))) throw badRequest("attachment_type_not_allowed", "Attachment run.exe: executable types are not allowed");
  if (input.attachments.reduce((n, a) => n + a.content.byteLength, 0) > 10 * 1024 * 1024) throw badRequest("attachments_too_large", "Attachments exceed 10 MB");
  if (1 + input.cc.length + input.bcc.length > 50) throw badRequest("too_many_recipients", "At most 50 recipients");
  if (input.tags.length > 10) throw badRequest("invalid_tags", "At most 10 tags");
}

describe("cc, bcc, headers, attachments and tags at the gateway", () => {
  let app: FastifyInstance;
  const sent: EmailInput[] = [];
  const lists: ListEmailsRequest[] = [];
  const stats: GetStatsRequest[] = [];
  let stored: EmailRecord | undefined;

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load({ workspaces: [{ id: "ws_fields", name: "Fields", apiKeys: [{ key: "mr_test_fields_unit_1" }] }] });
    const email = createClient(EmailService, memoryTransport(({ service }) => {
      service(EmailService, {
        sendEmail(req) {
          check(req.email!);
          sent.push(req.email!);
          stored = recordOf(req.email!, sent.length);
          return { email: stored };
        },
        sendBatch(req) {
          const successful: EmailRecord[] = [];
          const failed: Array<{ index: number; error: { code: string; message: string; httpStatus: number } }> = [];
          req.emails.forEach((e, index) => {
            try {
              check(e);
              sent.push(e);
              successful.push(recordOf(e, sent.length));
            } catch (err) {
              failed.push({ index, error: { code: (err as { code?: string }).code ?? "internal", message: String((err as Error).message), httpStatus: 400 } });
            }
          });
          return { successful, failed };
        },
        getEmail: () => ({ email: stored }),
        listEmails(req) {
          lists.push(req);
          return { emails: stored ? [stored] : [], nextCursor: "" };
        },
        getStats(req) {
          stats.push(req);
          return { from: "2030-01-01", to: "2030-01-02", days: [], groups: [] };
        },
      });
    }));
    app = await buildGateway(
      {
        config: loadConfig({}),
        logger: createLogger("gateway-fields-test", "silent"),
        clients: { ...directoryClients(dir), email } as unknown as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 60_000,
      },
      { api: [registerSendEmail, registerSendBatch, registerGetEmail, registerListEmails, registerEmailStats], public: [] },
    );
  });
  afterAll(async () => app?.close());

  const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: KEY, payload: payload as object });
  const raw = (extra: Record<string, unknown> = {}) => ({ from: FROM, to: "ann@example.test", subject: "Invoice", html: "<p>Hi</p>", ...extra });

  it("passes each field to the email service, attachments decoded to their bytes, and shows them on the record", async () => {
    const pdf = randomBytes(3000);
    const logo = randomBytes(200);
    sent.length = 0;
    const res = await post("/v1/emails", raw({
      cc: "Bob <bob@example.test>",
      bcc: ["carol@example.test", "dan@example.test"],
      headers: { "X-Entity-Ref-ID": "inv-1042", "X-Priority": "1" },
      attachments: [
        { filename: "invoice.pdf", content: b64(pdf), contentType: "application/pdf" },
        // Wrapped base64 (as `base64` writes it) is the same bytes.
        { filename: "logo.png", content: b64(logo).replace(/(.{76})/g, "$1\n"), contentId: "logo" },
      ],
      tags: [{ name: "category", value: "invoice" }, { name: "plan", value: "pro" }],
    }));
    expect(res.statusCode, res.body).toBe(200);
    const input = sent[0];
    expect(input.cc).toEqual(["Bob <bob@example.test>"]);
    expect(input.bcc).toEqual(["carol@example.test", "dan@example.test"]);
    expect(input.headers.map((h) => [h.name, h.value])).toEqual([["X-Entity-Ref-ID", "inv-1042"], ["X-Priority", "1"]]);
    expect(input.attachments.map((a) => [a.filename, a.contentType, a.contentId])).toEqual([["invoice.pdf", "application/pdf", ""], ["logo.png", "", "logo"]]);
    expect(Buffer.from(input.attachments[0].content).equals(pdf)).toBe(true);
    expect(Buffer.from(input.attachments[1].content).equals(logo)).toBe(true);
    expect(input.tags.map((t) => [t.name, t.value])).toEqual([["category", "invoice"], ["plan", "pro"]]);

    const shown = {
      cc: ["Bob <bob@example.test>"],
      bcc: ["carol@example.test", "dan@example.test"],
      headers: { "X-Entity-Ref-ID": "inv-1042", "X-Priority": "1" },
      tags: [{ name: "category", value: "invoice" }, { name: "plan", value: "pro" }],
      attachments: [
        { filename: "invoice.pdf", contentType: "application/pdf", size: 3000 },
        { filename: "logo.png", contentType: "application/octet-stream", size: 200, contentId: "logo" },
      ],
    };
    expect(res.json().email).toMatchObject(shown);
    const got = await app.inject({ method: "GET", url: `/v1/emails/${res.json().email.id}`, headers: KEY });
    expect(got.json().email).toMatchObject(shown);
    const listed = await app.inject({ method: "GET", url: "/v1/emails", headers: KEY });
    expect(listed.json().emails.items[0]).toMatchObject(shown);
    // No bytes in any record.
    expect(JSON.stringify(got.json())).not.toContain(b64(pdf).slice(0, 40));
  });

  it("leaves the fields out of records of emails that carry none (the spec's record is unchanged)", async () => {
    const res = await post("/v1/emails", raw());
    expect(Object.keys(res.json().email).sort()).toEqual(["from", "id", "messageId", "status", "subject", "to", "type"]);
  });

  it("refuses content that is not base64, naming attachments[i].content; nothing is sent", async () => {
    for (const content of ["not base64!", "QUJD$", "QUJDR", "QU=JD", "ab+c-d=="]) {
      sent.length = 0;
      const res = await post("/v1/emails", raw({ attachments: [{ filename: "ok.txt", content: "aGk=" }, { filename: "bad.txt", content }] }));
      expect(res.statusCode, content).toBe(400);
      expect(res.json()).toMatchObject({ code: "invalid_payload", message: expect.stringContaining("attachments[1].content is not valid base64") });
      expect(sent).toEqual([]);
    }
  });

  it("refuses shapes the schema does not allow with 400 invalid_payload: no filename, a header that is not text, a tag without a value, cc of the wrong type", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ attachments: [{ content: "aGk=" }] }, /attachments\.0\.filename is required/],
      [{ attachments: [{ filename: "a.txt", content: "aGk=", extra: 1 }] }, /unknown field extra/],
      [{ headers: { "X-Count": 3 } }, /headers\.X-Count/],
      [{ headers: ["X-A: b"] }, /headers/],
      [{ tags: [{ name: "a" }] }, /tags\.0\.value is required/],
      [{ cc: 5 }, /cc/],
      [{ bcc: [""] }, /bcc\.0: must not be empty/],
    ];
    for (const [extra, message] of cases) {
      sent.length = 0;
      const res = await post("/v1/emails", raw(extra));
      expect(res.statusCode, JSON.stringify(extra)).toBe(400);
      expect(res.json()).toMatchObject({ code: "invalid_payload", message: expect.stringMatching(message) });
      expect(sent).toEqual([]);
    }
  });

  it("answers the email service's five new refusals as 400s with their documentation", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ headers: { from: "x@evil.test" } }, "header_not_allowed"],
      [{ attachments: [{ filename: "run.exe", content: "TVo=" }] }, "attachment_type_not_allowed"],
      [{ cc: Array.from({ length: 50 }, (_, i) => `c${i}@example.test`) }, "too_many_recipients"],
      [{ tags: Array.from({ length: 11 }, (_, i) => ({ name: `t${i}`, value: "x" })) }, "invalid_tags"],
    ];
    for (const [extra, code] of cases) {
      const res = await post("/v1/emails", raw(extra));
      expect(res.statusCode, code).toBe(400);
      expect(res.json()).toMatchObject({ statusCode: 400, error: "Bad Request", code, docsUrl: expect.stringMatching(new RegExp(`/docs/errors/${code}$`)) });
    }
    for (const code of ["header_not_allowed", "attachment_type_not_allowed", "attachments_too_large", "too_many_recipients", "invalid_tags"]) {
      expect(ERROR_TABLE[code]).toMatchObject({ status: 400, description: expect.stringMatching(/.{60}/) });
    }
  });

  it("takes 10 MB of attachments in one request (about 14 MB of base64) and refuses what is beyond with the service's 400, not a 413", async () => {
    const ten = randomBytes(10 * 1024 * 1024);
    sent.length = 0;
    const ok = await post("/v1/emails", raw({ html: `<p>${"x".repeat(1024 * 1024)}</p>`, attachments: [{ filename: "a.dat", content: b64(ten.subarray(0, 5 * 1024 * 1024)) }, { filename: "b.dat", content: b64(ten.subarray(5 * 1024 * 1024)) }] }));
    expect(ok.statusCode, ok.body.slice(0, 200)).toBe(200);
    expect(Buffer.concat(sent[0].attachments.map((a) => a.content)).equals(ten)).toBe(true);
    const over = await post("/v1/emails", raw({ attachments: [{ filename: "a.dat", content: b64(Buffer.concat([ten, Buffer.alloc(1)])) }] }));
    expect(over.statusCode).toBe(400);
    expect(over.json().code).toBe("attachments_too_large");
    expect(SINGLE_EMAIL_BODY_LIMIT_BYTES).toBeGreaterThan(12 * 1024 * 1024 + (10 * 1024 * 1024 * 4) / 3);
  }, 30_000);

  it("batch: each item carries its fields; an item with bad base64 or a refused header fails alone", async () => {
    sent.length = 0;
    const file = randomBytes(100 * 1024);
    const emails = Array.from({ length: 50 }, (_, i) => raw({ to: `u${i}@example.test`, attachments: [{ filename: `r${i}.pdf`, content: b64(file) }], tags: [{ name: "n", value: String(i) }] }));
    emails[7] = raw({ to: "bad@example.test", attachments: [{ filename: "x.pdf", content: "%%%" }] });
    emails[9] = raw({ to: "hdr@example.test", headers: { Bcc: "spy@example.test" } });
    const res = await post("/v1/emails/batch", { emails });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    const body = res.json().emails;
    expect(body.successful).toHaveLength(48);
    expect(body.successful[0]).toMatchObject({ to: "u0@example.test", tags: [{ name: "n", value: "0" }], attachments: [{ filename: "r0.pdf", size: 100 * 1024 }] });
    expect(body.failed).toEqual([
      expect.objectContaining({ index: 7, to: "bad@example.test", statusCode: 400, code: "invalid_payload", message: expect.stringContaining("attachments[0].content") }),
      expect.objectContaining({ index: 9, to: "hdr@example.test", statusCode: 400, code: "header_not_allowed" }),
    ]);
    expect(sent.every((e) => e.attachments.length === 0 || Buffer.from(e.attachments[0].content).equals(file))).toBe(true);
  });

  it("filters the list, the export and the stats by tags (repeatable), and refuses a tag that is not name:value", async () => {
    lists.length = 0;
    stats.length = 0;
    expect((await app.inject({ method: "GET", url: "/v1/emails?tag=category:invoice", headers: KEY })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: "/v1/emails?tag=category:invoice&tag=plan:pro&tag=plan:pro", headers: KEY })).statusCode).toBe(200);
    const csv = await app.inject({ method: "GET", url: "/v1/emails/export?tag=plan:pro", headers: KEY });
    expect(csv.statusCode).toBe(200);
    // The stand-in lists the last email sent alone.
    await post("/v1/emails", raw({ cc: ["a@example.test", "b@example.test"], tags: [{ name: "plan", value: "pro" }, { name: "x", value: "y" }], attachments: [{ filename: "r.pdf", content: "aGk=" }, { filename: "s.pdf", content: "aGk=" }] }));
    const again = await app.inject({ method: "GET", url: "/v1/emails/export?tag=plan:pro", headers: KEY });
    const [header, row] = parse(again.body) as string[][];
    expect(header.slice(-4)).toEqual(["cc", "bcc", "tags", "attachments"]);
    expect(row.slice(-4)).toEqual(["a@example.test; b@example.test", "", "plan:pro; x:y", "r.pdf; s.pdf"]);
    expect(lists.map((l) => l.tags)).toEqual([["category:invoice"], ["category:invoice", "plan:pro"], ["plan:pro"], ["plan:pro"]]);

    const s = await app.inject({ method: "GET", url: "/v1/stats/emails?tag=category:invoice&tag=plan:pro", headers: KEY });
    expect(s.statusCode, s.body).toBe(200);
    expect(s.json().stats.tags).toEqual(["category:invoice", "plan:pro"]);
    expect(stats[0].tags).toEqual(["category:invoice", "plan:pro"]);

    for (const url of ["/v1/emails?tag=nocolon", "/v1/emails?tag=a:b&tag=bad%20tag:x", "/v1/stats/emails?tag=a:b:c", `/v1/emails?${Array.from({ length: 11 }, (_, i) => `tag=t:${i}`).join("&")}`]) {
      const res = await app.inject({ method: "GET", url, headers: KEY });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code).toBe("invalid_request");
    }
  });

  it("documents the fields, their limits, the tag filters and the new codes in the OpenAPI document", async () => {
    await app.ready();
    const doc = app.openapiDocument() as { paths: Record<string, Record<string, { parameters?: Array<{ name: string; schema: unknown; description?: string }>; responses: Record<string, { description: string }> }>>; components: { schemas: Record<string, { properties?: Record<string, { description?: string }> }> } };
    const rawEmail = doc.components.schemas.RawEmail.properties!;
    const templated = doc.components.schemas.TemplatedEmail.properties!;
    for (const field of ["cc", "bcc", "headers", "attachments", "tags"]) {
      expect(rawEmail[field], field).toBeDefined();
      expect(templated[field], field).toBeDefined();
    }
    expect(rawEmail.cc.description).toMatch(/at most 50 recipients/);
    expect(rawEmail.attachments.description).toMatch(/10 MB/);
    expect(rawEmail.attachments.description).toMatch(/attachment_type_not_allowed/);
    expect(JSON.stringify(doc.components.schemas.EmailHeaders)).toMatch(/header_not_allowed/);
    expect(rawEmail.tags.description).toMatch(/At most 10/);
    expect(doc.components.schemas.Attachment.properties).toHaveProperty("contentId");
    expect(doc.components.schemas.AttachmentInfo.properties).toHaveProperty("size");
    const sendDoc = doc.paths["/v1/emails"].post.responses["400"].description;
    for (const code of ["header_not_allowed", "attachment_type_not_allowed", "attachments_too_large", "too_many_recipients", "invalid_tags"]) expect(sendDoc).toContain(code);
    const tagParam = (path: string) => doc.paths[path].get.parameters!.find((p) => p.name === "tag");
    expect(tagParam("/v1/emails")).toMatchObject({ description: expect.stringMatching(/Repeatable/) });
    expect(tagParam("/v1/stats/emails")).toMatchObject({ description: expect.stringMatching(/repeatable/) });
    expect(JSON.stringify(tagParam("/v1/emails")!.schema)).toContain('"type":"array"');
  });
});

describe("decodeBase64", () => {
  it("reads standard and URL-safe base64, padded or not, wrapped or not; refuses anything else", () => {
    const bytes = Buffer.from([0xfb, 0xff, 0xfe, 0x00, 0x41]);
    for (const text of [bytes.toString("base64"), bytes.toString("base64url"), bytes.toString("base64").replace(/=+$/, ""), `${bytes.toString("base64").slice(0, 4)}\r\n${bytes.toString("base64").slice(4)}`]) {
      expect(decodeBase64(text)?.equals(bytes), text).toBe(true);
    }
    expect(decodeBase64("")?.length).toBe(0);
    for (const bad of ["a", "abcde", "ab=c", "a===", "+/-_", "abc*", "abcd=", "é"]) expect(decodeBase64(bad), bad).toBeUndefined();
  });
});
