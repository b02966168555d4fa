import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { DeliverySchema, DeliveryState, WebhookSchema, WebhookStatus } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { webhookListView, webhookPageView } from "./webhooks.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";
const WH = `wh_${"a".repeat(26)}`;
const webhook = create(WebhookSchema, { id: WH, url: `https://x.test/${HOSTILE}`, displayName: HOSTILE, events: [HOSTILE], status: WebhookStatus.PAUSED, pausedReason: HOSTILE, token: `whsec_${HOSTILE}` });
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("webhooks views", () => {
  it("escapes what the list and the form show, in text and attributes", () => {
    const page = webhookListView([webhook], csrf, { url: HOSTILE, displayName: HOSTILE, events: [] }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<a href="/console/webhooks/${WH}">${ESCAPED}</a>`);
    expect(page).toContain(`<code>${ESCAPED}</code>`);
    expect(page).toContain(`name="url" type="url" required value="${ESCAPED}"`);
    expect(page).toContain(`name="displayName" value="${ESCAPED}"`);
    expect(page).toContain(`${csrf}\n<div class="field"><label for="url">`);
  });

  it("keeps the form's checked events, and shows no form without a csrf field (who may not add)", () => {
    const page = webhookListView([], csrf, { url: "", displayName: "", events: ["EMAIL_SENT"] }).toString();
    expect(page).toContain('name="events" value="EMAIL_SENT" checked>');
    expect(page).toContain('name="events" value="EMAIL_DELIVERED">');
    expect(page).toContain("No webhooks yet.");
    expect(webhookListView([], undefined, { url: "", displayName: "", events: [] }).toString()).not.toContain("<form");
  });

  it("escapes a webhook's page: name, URL, reason, secret, and what deliveries say", () => {
    const d = create(DeliverySchema, { id: `whd_${"0".repeat(26)}`, eventType: HOSTILE, state: DeliveryState.FAILED, attempts: 2, lastAttempt: { statusCode: 0, error: HOSTILE } });
    const page = webhookPageView({ webhook, recent: [d], deliveries: [d], nextCursor: "", cursor: "", csrf, mayRedeliver: true, manages: true, now: new Date() }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<h1>${ESCAPED} <span class="badge warn">Paused</span></h1>`);
    expect(page).toContain(`data-copy="whsec_${ESCAPED}"`);
    expect(page).toContain(`<dd style="margin:0 0 .5rem">${ESCAPED}</dd>`);
    expect(page).toContain(`aria-label="Retry ${ESCAPED} delivery whd_${"0".repeat(26)}">Retry</button>`);
    expect(page).toContain(`<span class="muted">${ESCAPED}</span>`);
    expect(page).toContain('name="status" value="ACTIVE"><button type="submit" class="secondary">Enable</button>');
  });
});
