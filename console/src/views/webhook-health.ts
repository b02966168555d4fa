/**
 * A webhook's health on its console page: the last successful delivery, the attempts failed
 * in a row, when the next attempt is due, and a notice when the endpoint has failed every
 * attempt for over a day (the webhooks unit pauses it when that goes on: its pause rule).
 *
 * From what the webhooks unit records: the webhook's run of failures (consecutive_failures,
 * failing_since) and its recent deliveries (state, last attempt, next_attempt_at).
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DeliveryState, WebhookStatus, type Delivery, type Webhook } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { formatTime as formatTimeMarkup, statusBadge as statusBadgeMarkup, timeText } from "../layout.js";
import { html, render, trusted } from "./html.js";

// The layout's helpers build (and escape) their markup; not views yet.
const formatTime = (date: Date) => trusted(formatTimeMarkup(date));
const statusBadge = (text: string, tone: Parameters<typeof statusBadgeMarkup>[1]) => trusted(statusBadgeMarkup(text, tone));

const DAY_MS = 24 * 60 * 60 * 1000;

export interface WebhookHealth {
  lastSuccess?: Date;
  failuresInARow: number;
  failingSince?: Date;
  nextAttempt?: Date;
  /** Every attempt failed for over a day. */
  failingOverADay: boolean;
}

/** `recent`: the webhook's deliveries, newest first, as ListDeliveries answers. */
export function webhookHealth(w: Webhook, recent: Delivery[], now: Date): WebhookHealth {
  const succeeded = recent.find((d) => d.state === DeliveryState.SUCCEEDED);
  const lastSuccess = succeeded?.lastAttempt?.attemptedAt ? timestampDate(succeeded.lastAttempt.attemptedAt)
    : succeeded?.createdAt ? timestampDate(succeeded.createdAt) : undefined;
  const due = recent.filter((d) => d.state === DeliveryState.PENDING && d.nextAttemptAt).map((d) => timestampDate(d.nextAttemptAt!));
  const nextAttempt = due.length ? new Date(Math.min(...due.map((d) => d.getTime()))) : undefined;
  const failingSince = w.failingSince && w.consecutiveFailures > 0 ? timestampDate(w.failingSince) : undefined;
  return {
    lastSuccess,
    failuresInARow: w.consecutiveFailures,
    failingSince,
    nextAttempt,
    failingOverADay: !!failingSince && now.getTime() - failingSince.getTime() > DAY_MS,
  };
}

/** The health card (and the notice above it when failing for over a day). */
export function webhookHealthHtml(w: Webhook, recent: Delivery[], now: Date, headingId: string): string {
  const h = webhookHealth(w, recent, now);
  const paused = w.status === WebhookStatus.PAUSED;
  const notice = h.failingOverADay
    ? html`<div class="flash error" role="alert" data-health="failing">This endpoint has failed every delivery attempt since ${timeText(h.failingSince!)} (${h.failuresInARow} in a row), for over a day.${paused ? "" : " Fix the endpoint or pause the webhook: it is paused automatically if this goes on."}</div>`
    : "";
  const failures = h.failuresInARow === 0 ? statusBadge("0", "ok")
    : html`${statusBadge(String(h.failuresInARow), "bad")}${h.failingSince ? html` <span class="muted">since ${formatTime(h.failingSince)}</span>` : ""}`;
  const last = h.lastSuccess ? formatTime(h.lastSuccess) : html`<span class="muted">none among the last ${recent.length} deliveries</span>`;
  const next = paused ? html`<span class="muted">held while the webhook is paused</span>`
    : h.nextAttempt ? formatTime(h.nextAttempt) : html`<span class="muted">nothing waiting</span>`;
  return render(html`${notice}<section class="card" aria-labelledby="${headingId}"><h2 id="${headingId}" style="margin-top:0">Health</h2>
<dl class="grid" style="margin:0"><div><dt class="muted">Last success</dt><dd style="margin:0" data-health="last-success">${last}</dd></div>
<div><dt class="muted">Failed attempts in a row</dt><dd style="margin:0" data-health="failures">${failures}</dd></div>
<div><dt class="muted">Next attempt</dt><dd style="margin:0" data-health="next">${next}</dd></div></dl></section>`);
}
