import { memoryTransport } from "@mailroom/kit/connect.js";
import { describe, expect, it } from "vitest";
import { createClient} from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { EmailService, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { buildTestWorld } from "./testing.js";
import { emailRoutes } from "./routes.js";

async function client() {
  const w = await buildTestWorld();
  w.directory.templates.set("welcome", { name: "welcome", subject: "Hi", html: "<p>Hi</p>", text: "", previewText: "" });
  return { w, email: createClient(EmailService, memoryTransport(emailRoutes(w.service))) };
}

const raw = (to: string, more: Record<string, unknown> = {}) => ({
  to,
  content: { case: "raw" as const, value: { from: "team@acme.test", subject: "Hello", html: "<p>Hi</p>", ...more } },
});

describe("email Connect routes", () => {
  it("sends, reads, cancels and serves compiled content in protobuf terms", async () => {
    const { w, email } = await client();
    const sent = await email.sendEmail({ workspaceId: "ws", email: { ...raw("ann@example.test"), groupBy: "g" } });
    expect(sent.email).toMatchObject({ status: EmailStatus.SENT, type: "raw", from: "team@acme.test", subject: "Hello", groupBy: "g", template: "" });
    const compiled = await email.getEmailContent({ workspaceId: "ws", id: sent.email!.id });
    expect(compiled.compiled).toBeDefined();

    const later = timestampFromDate(new Date(w.clock.now().getTime() + 3600_000));
    const scheduled = await email.sendEmail({ workspaceId: "ws", email: { ...raw("bob@example.test"), sendAt: later } });
    expect(scheduled.email?.status).toBe(EmailStatus.SCHEDULED);
    expect(scheduled.email?.sendAt).toEqual(later);
    const cancelled = await email.cancelEmail({ workspaceId: "ws", id: scheduled.email!.id });
    expect(cancelled.email?.status).toBe(EmailStatus.CANCELLED);
    expect((await email.getEmail({ workspaceId: "ws", id: scheduled.email!.id })).email?.status).toBe(EmailStatus.CANCELLED);
  });

  it("maps cc, bcc, headers, attachments and tags both ways, batch items included, and serves an attachment's bytes", async () => {
    const { w, email } = await client();
    w.directory.suppressions.set("gone@example.test", "complaint");
    const input = {
      ...raw("ann@example.test"),
      cc: ["Bob <bob@example.test>", "gone@example.test"],
      bcc: ["eve@example.test"],
      headers: [{ name: "X-Ref", value: "7" }],
      attachments: [{ filename: "a.csv", content: new TextEncoder().encode("x,y"), contentType: "", contentId: "" }],
      tags: [{ name: "kind", value: "report" }],
    };
    const sent = (await email.sendEmail({ workspaceId: "ws", email: input })).email!;
    expect(sent.cc).toEqual(["Bob <bob@example.test>", "gone@example.test"]);
    expect(sent.bcc).toEqual(["eve@example.test"]);
    expect(sent.headers.map((h) => [h.name, h.value])).toEqual([["X-Ref", "7"]]);
    expect(sent.attachments.map((a) => [a.filename, a.contentType, a.size, a.contentId])).toEqual([["a.csv", "text/csv", 3n, ""]]);
    expect(sent.tags.map((t) => [t.name, t.value])).toEqual([["kind", "report"]]);
    expect(sent.suppressed.map((s) => [s.email, s.reason])).toEqual([["gone@example.test", "complaint"]]);
    const file = await email.getEmailAttachment({ workspaceId: "ws", id: sent.id, index: 0 });
    expect(new TextDecoder().decode(file.content)).toBe("x,y");
    expect(file.attachment?.filename).toBe("a.csv");

    const batch = await email.sendBatch({ workspaceId: "ws", emails: [input, { ...input, tags: [{ name: "bad tag", value: "x" }] }] });
    expect(batch.successful.map((r) => r.tags.length)).toEqual([1]);
    expect(batch.failed.map((f) => [f.index, f.error?.code])).toEqual([[1, "invalid_tags"]]);
    const listed = await email.listEmails({ workspaceId: "ws", tags: ["kind:report"] });
    expect(listed.emails).toHaveLength(2);
    const stats = await email.getStats({ workspaceId: "ws", tags: ["kind:report"] });
    expect(stats.totals?.sent).toBe(0n);
    const bad = await email.getStats({ workspaceId: "ws", tags: ["nope"] }).then(() => undefined, (e) => e);
    expect(errorInfoOf(bad)?.code).toBe("invalid_request");
  });

  it("compiles an automation's send (the internal flag) as automation content; an API email stays transactional", async () => {
    const { w, email } = await client();
    const templated = (to: string) => ({ to, content: { case: "templated" as const, value: { template: "welcome" } } });
    await email.sendBatch({ workspaceId: "ws", emails: [{ ...templated("pia@example.test"), automation: true }], independent: true });
    await email.sendEmail({ workspaceId: "ws", email: templated("api@example.test") });
    expect(w.renderer.inputs.map((i) => [i.automation, i.literal])).toEqual([[true, false], [false, false]]);
  });

  it("lists emails newest first with proto filters and cursor paging", async () => {
    const { w, email } = await client();
    const a = await email.sendEmail({ workspaceId: "ws", email: { ...raw("ann@example.test"), groupBy: "g" } });
    w.clock.advance(1000);
    const b = await email.sendEmail({ workspaceId: "ws", email: raw("bob@example.test") });
    await email.sendEmail({ workspaceId: "other", email: raw("ann@example.test") });
    const first = await email.listEmails({ workspaceId: "ws", limit: 1 });
    expect(first.emails.map((e) => e.id)).toEqual([b.email!.id]);
    expect(first.emails[0].sentAt).toBeDefined();
    const second = await email.listEmails({ workspaceId: "ws", limit: 1, cursor: first.nextCursor });
    expect(second.emails.map((e) => e.id)).toEqual([a.email!.id]);
    expect(second.nextCursor).toBe("");
    expect((await email.listEmails({ workspaceId: "ws", recipient: "ANN" })).emails.map((e) => e.id)).toEqual([a.email!.id]);
    expect((await email.listEmails({ workspaceId: "ws", groupBy: "g" })).emails).toHaveLength(1);
    expect((await email.listEmails({ workspaceId: "ws", statuses: [EmailStatus.DELIVERED] })).emails).toHaveLength(0);
    expect((await email.listEmails({ workspaceId: "ws", statuses: [EmailStatus.SENT] })).emails).toHaveLength(2);
    const bad = await email.listEmails({ workspaceId: "ws", statuses: [EmailStatus.UNSPECIFIED] }).catch((e) => e);
    expect(errorInfoOf(bad)).toMatchObject({ code: "invalid_request", httpStatus: 400 });
    const forged = await email.listEmails({ workspaceId: "ws", cursor: "!!" }).catch((e) => e);
    expect(errorInfoOf(forged)).toMatchObject({ code: "invalid_cursor", httpStatus: 400 });
  });

  it("carries domain refusals as ErrorInfo with status, code and allowed lists", async () => {
    const { email } = await client();
    const err = await email.sendEmail({ workspaceId: "ws", email: raw("ann@example.test", { from: "eve@evil.test" }) }).catch((e) => e);
    expect(errorInfoOf(err)).toMatchObject({ code: "invalid_from", httpStatus: 400, allowedDomains: ["acme.test"] });
    const missing = await email.getEmail({ workspaceId: "ws", id: "trs_nope" }).catch((e) => e);
    expect(errorInfoOf(missing)).toMatchObject({ code: "email_not_found", httpStatus: 404 });
    const empty = await email.sendEmail({ workspaceId: "ws", email: { to: "ann@example.test" } }).catch((e) => e);
    expect(errorInfoOf(empty)).toMatchObject({ code: "invalid_payload", httpStatus: 400 });
  });

  it("reports batch failures at their index in the request, including items with no content", async () => {
    const { email } = await client();
    const res = await email.sendBatch({
      workspaceId: "ws",
      emails: [
        { to: "nobody@example.test" },
        raw("ann@example.test"),
        raw("eve@example.test", { from: "eve@evil.test" }),
        { to: "t@example.test", content: { case: "templated", value: { template: "welcome" } } },
      ],
    });
    expect(res.successful.map((r) => r.to)).toEqual(["ann@example.test", "t@example.test"]);
    expect(res.failed.map((f) => [f.index, f.to, f.error?.code])).toEqual([
      [0, "nobody@example.test", "invalid_payload"],
      [2, "eve@example.test", "invalid_from"],
    ]);
    const tooMany = await email.sendBatch({ workspaceId: "ws", emails: Array.from({ length: 51 }, () => raw("a@example.test")) }).catch((e) => e);
    expect(errorInfoOf(tooMany)).toMatchObject({ code: "batch_invalid", httpStatus: 400 });
  });
});
