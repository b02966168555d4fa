import { describe, expect, it } from "vitest";
import { fixture } from "../testing.js";
import { classify, unsubscribeTokenInSubject } from "./classify.js";
import { fieldGroups, readMessage } from "./report.js";

const DELIVERY_ID = "trs_01jd5m3v8k2x9q7w4e6r1t0y3u";
const classified = async (name: string) => classify(await readMessage(fixture(name, { deliveryId: DELIVERY_ID })));

describe("classifying what comes back", () => {
  it("reads a Postfix DSN for an unknown user as a hard bounce with its reply", async () => {
    expect(await classified("dsn-hard-5.1.1.eml")).toEqual({
      kind: "bounce",
      verdict: {
        action: "failed",
        status: "5.1.1",
        permanent: true,
        smtpCode: 550,
        diagnostic: "550 5.1.1 <ann@example.test>: Recipient address rejected: User unknown in virtual mailbox table",
        finalRecipient: "ann@example.test",
        originalRecipient: "ann@example.test",
      },
    });
  });

  it("reads a failed 4.2.2 (mailbox full) as a soft bounce", async () => {
    const finding = await classified("dsn-soft-4.2.2.eml");
    expect(finding).toMatchObject({ kind: "bounce", verdict: { action: "failed", status: "4.2.2", permanent: false, smtpCode: 452 } });
  });

  it("reads a delay warning as no failure", async () => {
    expect(await classified("dsn-delayed.eml")).toEqual({ kind: "no-failure", action: "delayed", status: "4.4.1" });
  });

  it("reads an ARF abuse report with the quoted message's delivery id and return path", async () => {
    const finding = await classified("arf-abuse.eml");
    expect(finding).toMatchObject({ kind: "complaint", feedbackType: "abuse", userAgent: "ExampleFBL/1.0", deliveryId: DELIVERY_ID, reportedRecipient: "ann@example.test" });
    expect(finding.kind === "complaint" && finding.returnPath).toMatch(/^bounces\+[a-z2-7]+@bounces\.mailroom\.test$/);
  });

  it("finds the delivery id in a report that quotes only the headers (text/rfc822-headers)", async () => {
    const raw = fixture("arf-abuse.eml", { deliveryId: DELIVERY_ID }).replace(
      "Content-Type: message/rfc822\nContent-Disposition: inline",
      "Content-Type: text/rfc822-headers",
    );
    expect(raw).toContain("text/rfc822-headers");
    expect(classify(await readMessage(raw))).toMatchObject({ kind: "complaint", deliveryId: DELIVERY_ID });
  });

  it("reads a plain-text bounce with a 5.x.x status line as a hard bounce", async () => {
    expect(await classified("plain-bounce.eml")).toMatchObject({
      kind: "bounce",
      verdict: { action: "failed", status: "5.1.1", permanent: true, smtpCode: 550, diagnostic: "Remote host said: 550 5.1.1 <ann@example.test>... User unknown" },
    });
  });

  it("leaves auto-replies and not-spam feedback alone", async () => {
    expect(await classified("auto-reply.eml")).toMatchObject({ kind: "ignored" });
    const notSpam = fixture("arf-abuse.eml", { deliveryId: DELIVERY_ID }).replace("Feedback-Type: abuse", "Feedback-Type: not-spam");
    expect(classify(await readMessage(notSpam))).toMatchObject({ kind: "ignored", reason: 'feedback type "not-spam"' });
  });

  it("splits DSN field groups and joins folded lines", () => {
    const groups = fieldGroups("Reporting-MTA: dns; a\r\n\r\nAction: failed\r\nDiagnostic-Code: smtp; 550\r\n  user unknown\r\n\r\n\r\nAction: delayed\r\n");
    expect(groups.map((g) => Object.fromEntries(g))).toEqual([
      { "reporting-mta": "dns; a" },
      { action: "failed", "diagnostic-code": "smtp; 550 user unknown" },
      { action: "delayed" },
    ]);
  });

  it("finds the recipient token in an unsubscribe subject", () => {
    expect(unsubscribeTokenInSubject("unsubscribe eyJ3Ijoid3MifQ.abc-_1")).toBe("eyJ3Ijoid3MifQ.abc-_1");
    expect(unsubscribeTokenInSubject("Re: Unsubscribe  tok.en")).toBe("tok.en");
    expect(unsubscribeTokenInSubject("hello")).toBeUndefined();
  });
});
