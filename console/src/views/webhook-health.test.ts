import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DeliverySchema, DeliveryState, WebhookSchema, WebhookStatus } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { webhookHealth, webhookHealthHtml } from "./webhook-health.js";

const at = (hour: number, minute = 0) => new Date(Date.UTC(2030, 0, 1, hour, minute));
const NOW = at(12);
const delivery = (state: DeliveryState, created: Date, over: { attemptedAt?: Date; next?: Date; statusCode?: number } = {}) => create(DeliverySchema, {
  id: `whd_${created.getTime()}`, eventType: "EMAIL_SENT", state, attempts: 1, createdAt: timestampFromDate(created),
  ...(over.attemptedAt ? { lastAttempt: { attemptedAt: timestampFromDate(over.attemptedAt), statusCode: over.statusCode ?? 200 } } : {}),
  ...(over.next ? { nextAttemptAt: timestampFromDate(over.next) } : {}),
});
const webhook = (failures: number, since?: Date, status = WebhookStatus.ACTIVE) =>
  create(WebhookSchema, { id: "wh_1", status, consecutiveFailures: failures, ...(since ? { failingSince: timestampFromDate(since) } : {}) });

describe("console: a webhook's health", () => {
  it("takes the last success from the newest succeeded delivery, the failures from the webhook's run, and the earliest due retry", () => {
    const recent = [ // newest first, as ListDeliveries answers
      delivery(DeliveryState.PENDING, at(11, 50), { attemptedAt: at(11, 51), statusCode: 500, next: at(12, 20) }),
      delivery(DeliveryState.PENDING, at(11, 40), { attemptedAt: at(11, 45), statusCode: 0, next: at(12, 5) }),
      delivery(DeliveryState.SUCCEEDED, at(11, 0), { attemptedAt: at(11, 1) }),
      delivery(DeliveryState.SUCCEEDED, at(10, 0), { attemptedAt: at(10, 1) }),
    ];
    expect(webhookHealth(webhook(3, at(11, 45)), recent, NOW)).toEqual({
      lastSuccess: at(11, 1), failuresInARow: 3, failingSince: at(11, 45), nextAttempt: at(12, 5), failingOverADay: false,
    });
    const page = webhookHealthHtml(webhook(3, at(11, 45)), recent, NOW, "health-h");
    expect(page).toMatch(/data-health="last-success"><time datetime="2030-01-01T11:01:00.000Z">/);
    expect(page).toMatch(/data-health="failures"><span class="badge bad">3<\/span> <span class="muted">since <time datetime="2030-01-01T11:45:00.000Z">/);
    expect(page).toMatch(/data-health="next"><time datetime="2030-01-01T12:05:00.000Z">/);
    expect(page).not.toContain('data-health="failing"');
  });

  it("warns when every attempt has failed for over a day, and says none when no success is in sight", () => {
    const since = new Date(NOW.getTime() - 25 * 60 * 60 * 1000);
    const recent = [delivery(DeliveryState.FAILED, at(11), { attemptedAt: at(11), statusCode: 503 })];
    const page = webhookHealthHtml(webhook(14, since), recent, NOW, "h");
    expect(page).toMatch(/<div class="flash error" role="alert" data-health="failing">This endpoint has failed every delivery attempt since 2029-12-31 11:00 UTC \(14 in a row\), for over a day/);
    expect(page).toContain("none among the last 1 deliveries");
    expect(page).toContain("nothing waiting");
    // 23 hours is not yet a day; a paused webhook holds its retries.
    expect(webhookHealth(webhook(14, new Date(NOW.getTime() - 23 * 60 * 60 * 1000)), recent, NOW).failingOverADay).toBe(false);
    const paused = webhookHealthHtml(webhook(14, since, WebhookStatus.PAUSED), recent, NOW, "h");
    expect(paused).toContain("held while the webhook is paused");
    expect(paused).not.toContain("it is paused automatically");
  });

  it("shows a healthy endpoint plainly", () => {
    const page = webhookHealthHtml(webhook(0), [delivery(DeliveryState.SUCCEEDED, at(11), { attemptedAt: at(11) })], NOW, "h");
    expect(page).toMatch(/data-health="failures"><span class="badge ok">0<\/span><\/dd>/);
    expect(page).not.toContain("role=\"alert\"");
    expect(webhookHealth(webhook(0, at(1)), [], NOW).failingSince).toBeUndefined();
  });
});
