import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { EmailRecordSchema, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { batchItemJson, emailDetailJson, emailRecordJson, parseEmail, parseSendAt, replyToList } from "./email.js";

const raw = { from: "Acme <team@acme.test>", to: "ann@example.test", subject: "Hi", html: "<p>Hi</p>" };

describe("email payload schemas", () => {
  it("turns a raw email into EmailInput with every optional field", () => {
    const parsed = parseEmail({
      ...raw, fromName: "Acme Team", text: "Hi", previewText: "peek", replyTo: "help@acme.test",
      contactProperties: { plan: "pro", seats: 3 }, settings: { trackOpens: true }, groupBy: "g", sendAt: "2030-01-31T09:30:00+01:00", idempotencyKey: "k1",
    });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const input = parsed.input;
    expect(input.content.case).toBe("raw");
    expect(input.content.value).toMatchObject({ from: raw.from, fromName: "Acme Team", text: "Hi", previewText: "peek", contactProperties: { plan: "pro", seats: 3 } });
    expect(input.replyTo).toEqual(["help@acme.test"]);
    expect(input.settings).toMatchObject({ trackOpens: true });
    expect(input.settings?.trackClicks).toBeUndefined();
    expect(timestampDate(input.sendAt!).toISOString()).toBe("2030-01-31T08:30:00.000Z");
    expect(input).toMatchObject({ to: raw.to, groupBy: "g", idempotencyKey: "k1" });
    // The idempotency hash is the email service's, of the parsed request (domain/hash.ts).
    expect(input.payloadHash).toBe("");
  });

  it("refuses an empty idempotencyKey instead of sending without duplicate protection", () => {
    for (const body of [{ ...raw, idempotencyKey: "" }, { template: "welcome", to: "ann@example.test", idempotencyKey: "" }]) {
      const parsed = parseEmail(body);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatchObject({ code: "invalid_payload", message: expect.stringContaining("idempotencyKey must not be empty") });
    }
    expect(parseEmail({ ...raw, idempotencyKey: null }).ok).toBe(true);
  });

  it("turns a templated email into EmailInput, with or without variables", () => {
    const a = parseEmail({ template: "welcome", to: "ann@example.test", variables: { firstName: "Ann" } });
    const b = parseEmail({ template: "welcome", to: "ann@example.test" });
    expect(a.ok && a.input.content.case === "templated" && a.input.content.value.variables).toEqual({ firstName: "Ann" });
    expect(b.ok && b.input.content.case).toBe("templated");
  });

  it.each([
    ["neither form", { to: "a@b.test" }],
    ["both forms", { ...raw, template: "welcome" }],
    ["missing subject", { from: raw.from, to: raw.to, html: raw.html }],
    ["wrong type", { ...raw, to: 5 }],
    ["unknown field", { ...raw, bogus: "x@y.test" }],
    ["bad settings", { ...raw, settings: { trackClicks: "yes" } }],
    ["templated without to", { template: "welcome" }],
    ["null", null],
    ["deeply nested variables", { template: "welcome", to: "a@b.test", variables: { v: JSON.parse("[".repeat(5000) + "]".repeat(5000)) } }],
    ["array", [raw]],
  ])("refuses %s as invalid_payload", (_name, body) => {
    const parsed = parseEmail(body);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error.code).toBe("invalid_payload");
  });

  it("says a field is required only when it is missing, and names the wrong type otherwise", () => {
    const message = (body: unknown) => {
      const parsed = parseEmail(body);
      return parsed.ok ? "" : parsed.error.message;
    };
    expect(message({ from: raw.from, to: raw.to, html: raw.html })).toContain("subject is required");
    expect(message({ ...raw, subject: 5 })).not.toContain("subject is required");
    expect(message({ ...raw, subject: 5 })).toMatch(/subject: .*string/i);
    expect(message({ ...raw, settings: { trackOpens: "yes" } })).toMatch(/settings\.trackOpens: .*boolean/i);
  });

  it("refuses a sendAt that is not ISO 8601 with a zone as invalid_send_at", () => {
    for (const sendAt of ["tomorrow", "2030-01-31", "2030-01-31T09:30:00", "2030-02-30T09:30:00Z", "2030-01-31T25:00:00Z"]) {
      const parsed = parseEmail({ ...raw, sendAt });
      expect(parsed.ok, sendAt).toBe(false);
      if (!parsed.ok) expect(parsed.error.code).toBe("invalid_send_at");
    }
    expect(parseSendAt("2030-01-31T09:30Z")?.toISOString()).toBe("2030-01-31T09:30:00.000Z");
    expect(parseSendAt("2030-01-31T09:30:00.5-0230")?.toISOString()).toBe("2030-01-31T12:00:00.500Z");
  });

  it("takes replyTo as one address or a list of up to 5, on both forms, dropping duplicates case-insensitively", () => {
    const replyTo = (body: Record<string, unknown>) => {
      const parsed = parseEmail(body);
      return parsed.ok ? parsed.input.replyTo : parsed.error;
    };
    expect(replyTo({ ...raw, replyTo: "Help <help@acme.test>" })).toEqual(["Help <help@acme.test>"]);
    expect(replyTo({ ...raw, replyTo: ["a@acme.test", "B@acme.test", "A@ACME.test", "b@acme.test"] })).toEqual(["a@acme.test", "B@acme.test"]);
    expect(replyTo({ template: "welcome", to: "ann@example.test", replyTo: ["x@acme.test", "y@acme.test"] })).toEqual(["x@acme.test", "y@acme.test"]);
    expect(replyTo({ template: "welcome", to: "ann@example.test", replyTo: "x@acme.test" })).toEqual(["x@acme.test"]);
    for (const none of [undefined, null, "", []]) expect(replyTo({ ...raw, replyTo: none })).toEqual([]);
    // More than five entries are refused.
    expect(replyTo({ ...raw, replyTo: ["a@x.test", "b@x.test", "c@x.test", "d@x.test", "e@x.test", "f@x.test"] })).toMatchObject({ code: "invalid_payload" });
    expect(replyTo({ ...raw, replyTo: [""] })).toMatchObject({ code: "invalid_payload" });
    expect(replyTo({ ...raw, replyTo: [5] })).toMatchObject({ code: "invalid_payload" });
    expect(replyTo({ ...raw, replyTo: { email: "a@x.test" } })).toMatchObject({ code: "invalid_payload" });
    expect(replyToList(["a@x.test", " A@X.TEST "])).toEqual(["a@x.test"]);
  });

  it("allows 5 MB of HTML (UTF-8 bytes) and refuses more with payload_too_large", () => {
    expect(parseEmail({ ...raw, html: "x".repeat(5 * 1024 * 1024) }).ok).toBe(true);
    expect(parseEmail({ ...raw, html: "€".repeat(Math.floor((5 * 1024 * 1024) / 3)) }).ok).toBe(true);
    for (const html of ["x".repeat(5 * 1024 * 1024 + 1), "é".repeat(2.5 * 1024 * 1024 + 1)]) {
      const parsed = parseEmail({ ...raw, html });
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error.code).toBe("payload_too_large");
    }
  });
});

describe("email response records", () => {
  const record = (over: MessageInitShape<typeof EmailRecordSchema> = {}) =>
    create(EmailRecordSchema, { id: "trs_1", messageId: "m@acme.test", status: EmailStatus.SENT, to: "a@b.test", type: "raw", from: "f@acme.test", subject: "S", ...over });

  it("shows from/subject only for raw, template only for templated, groupBy only when given", () => {
    expect(emailRecordJson(record())).toEqual({ id: "trs_1", messageId: "m@acme.test", status: "SENT", to: "a@b.test", type: "raw", from: "f@acme.test", subject: "S" });
    expect(emailRecordJson(record({ type: "templated", template: "welcome", from: "", subject: "", groupBy: "g" }))).toEqual({
      id: "trs_1", messageId: "m@acme.test", status: "SENT", to: "a@b.test", type: "templated", template: "welcome", groupBy: "g",
    });
  });

  it("shapes batch items as id, messageId, status, to, type (+ template)", () => {
    expect(batchItemJson(record({ groupBy: "g" }))).toEqual({ id: "trs_1", messageId: "m@acme.test", status: "SENT", to: "a@b.test", type: "raw" });
    expect(batchItemJson(record({ type: "templated", template: "t", status: EmailStatus.SCHEDULED }))).toMatchObject({ status: "SCHEDULED", template: "t" });
  });

  it("adds sendAt, createdAt and the failure reason to GET", () => {
    const at = new Date("2030-01-31T08:30:00.000Z");
    const json = emailDetailJson(record({ status: EmailStatus.FAILED, statusReason: "Bounced (550)", sendAt: timestampFromDate(at), createdAt: timestampFromDate(at) }));
    expect(json).toMatchObject({ status: "FAILED", reason: "Bounced (550)", sendAt: at.toISOString(), createdAt: at.toISOString() });
  });
});
