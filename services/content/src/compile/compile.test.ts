/**
 * The automation content kind (an automation's email to a contact): the unsubscribe footer
 * and text line as a broadcast's, the transactional HTML limit. The renderer's compile tests
 * cover the footer's markup for broadcasts; these pin what the kind changes.
 */
import { describe, expect, it } from "vitest";
import { compileMessage, LIMITS, type CompileInput } from "./compile.js";
import { ContentKind, offersUnsubscribe } from "./compiled.js";
import { mergeMessage } from "../merge.js";
import { parseRecipientToken } from "../tokens.js";

const CTX = { secret: "compile-test-secret-0123456789", publicUrl: "https://mail.example.test" };
const RECIPIENT = { email: "pia@example.test", messageId: "m1@acme.test", variables: { firstName: "Pia" } };
const footerIn = (body: string) => /You are receiving this email/.test(body);

function render(kind: ContentKind, over: Partial<CompileInput> = {}) {
  const compiled = compileMessage(
    { html: "<html><body><p>Hi {{firstName}}</p></body></html>", subject: "Welcome", previewText: "", text: "", trackClicks: false, trackOpens: false, kind, contentId: "trs_1", workspaceId: "ws_acme", ...over },
    CTX,
  );
  return { compiled, merged: mergeMessage(compiled, RECIPIENT, CTX) };
}

describe("offersUnsubscribe", () => {
  it("is true for broadcasts and automation emails only", () => {
    expect([ContentKind.UNSPECIFIED, ContentKind.TRANSACTIONAL, ContentKind.BROADCAST, ContentKind.AUTOMATION].map(offersUnsubscribe)).toEqual([false, false, true, true]);
  });
});

describe("automation content", () => {
  it("gets the footer with this recipient's unsubscribe and manage links, in HTML and text", () => {
    const { compiled, merged } = render(ContentKind.AUTOMATION);
    expect(compiled.unsubscribeFooterAdded).toBe(true);
    expect(footerIn(merged.html)).toBe(true);
    expect(merged.html).toContain(`href="${merged.unsubscribeUrl}"`);
    expect(merged.html).toContain(`href="${merged.manageUrl}"`);
    // Generated text carries the footer's links; given text gets the unsubscribe line.
    expect(merged.text).toContain(`Unsubscribe [${merged.unsubscribeUrl}]`);
    expect(render(ContentKind.AUTOMATION, { text: "Hi {{firstName}}" }).merged.text).toMatch(/^Hi Pia\n\n--\nUnsubscribe: https:\/\/mail\.example\.test\/u\//);
    // The link's token names this recipient in this workspace: what the unsubscribe page acts on.
    const token = merged.unsubscribeUrl.split("/u/")[1]!;
    expect(parseRecipientToken([CTX.secret], token)).toMatchObject({ workspaceId: "ws_acme", email: "pia@example.test", contentId: "trs_1" });
  });

  it("leaves the footer out when the template links {{unsubscribeUrl}} itself; {{manageUrl}} merges too", () => {
    const html = '<p>Hi</p><a href="{{unsubscribeUrl}}">Leave</a> <a href="{{manageUrl}}">Preferences</a>';
    const { compiled, merged } = render(ContentKind.AUTOMATION, { html });
    expect(compiled.unsubscribeFooterAdded).toBe(false);
    expect(merged.html).toBe(`<p>Hi</p><a href="${merged.unsubscribeUrl}">Leave</a> <a href="${merged.manageUrl}">Preferences</a>`);
  });

  it("keeps the transactional HTML size limit, so a template that sent before still compiles", () => {
    const html = `<p>${"x".repeat(LIMITS.htmlBytes + 1)}</p>`;
    expect(render(ContentKind.AUTOMATION, { html }).compiled.unsubscribeFooterAdded).toBe(true);
    expect(() => render(ContentKind.BROADCAST, { html })).toThrow(/larger than/);
  });

  it("transactional content stays without a footer", () => {
    const { compiled, merged } = render(ContentKind.TRANSACTIONAL);
    expect(compiled.unsubscribeFooterAdded).toBe(false);
    expect(footerIn(merged.html) || footerIn(merged.text)).toBe(false);
  });
});
