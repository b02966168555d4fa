import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { AccountsService, ApiKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import {
  DeliverySchema, DeliveryState, WebhookSchema, WebhookService, WebhookStatus,
  type Delivery, type RedeliverDeliveryRequest, type UpdateWebhookRequest, type Webhook,
} from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError } from "@mailroom/kit/errors.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";

/**
 * A webhook's page over an in-memory webhooks unit keeping ListDeliveries' keyset contract
 * (newest first, an opaque cursor, invalid_cursor for any other): the table 25 a page with
 * "Older deliveries", Retry on a failed delivery (RedeliverDelivery), Disable and Enable
 * (UpdateWebhook's status), and nothing of it for a read-only session.
 */
const WS = "ws_hooks";
const WH = `wh_${"a".repeat(26)}`;
const PLAIN: Record<string, { id: string; role: string; scopes: string[] }> = {
  mr_test_hooks_admin: { id: "key_admin", role: "ADMIN", scopes: ["api_user", "admin"] },
  mr_test_hooks_viewer: { id: "key_viewer", role: "VIEWER", scopes: ["api_read"] },
};
const did = (n: number) => `whd_${String(n).padStart(26, "0")}`;
let webhook: Webhook;
let deliveries: Delivery[];
let redelivered: RedeliverDeliveryRequest[];
let updated: UpdateWebhookRequest[];

function reset() {
  redelivered = [];
  updated = [];
  webhook = create(WebhookSchema, { id: WH, workspaceId: WS, url: "https://hooks.acme.test/in", displayName: "CRM <sync>", events: ["EMAIL_SENT"], status: WebhookStatus.ACTIVE, token: "whsec_x" });
  // 60 deliveries, newest first; number 59 (the newest) failed, 58 is pending.
  deliveries = Array.from({ length: 60 }, (_, i) => 59 - i).map((n) => create(DeliverySchema, {
    id: did(n), webhookId: WH, eventType: n === 59 ? "EMAIL_<b>" : "EMAIL_SENT", attempts: 1,
    state: n === 59 ? DeliveryState.FAILED : n === 58 ? DeliveryState.PENDING : DeliveryState.SUCCEEDED,
    lastAttempt: n === 58 ? undefined : { statusCode: n === 59 ? 500 : 200 },
    createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1, 12, 0, Math.floor(n / 2)))),
  }));
}

const cursorOf = (d: Delivery) => Buffer.from(d.id).toString("base64url");

const transport = memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      const k = PLAIN[req.apiKey];
      if (!k) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: WS, keyId: k.id, scopes: k.scopes };
    },
    getApiKey(req) {
      const k = Object.values(PLAIN).find((p) => p.id === req.keyId)!;
      return { apiKey: create(ApiKeySchema, { id: k.id, workspaceId: WS, name: k.id, role: k.role, scopes: k.scopes }) };
    },
    getWorkspace: () => ({ workspace: { id: WS, name: "Acme" } }),
  });
  service(TeamService, { listMembers: () => ({ members: [] }) });
  service(WebhookService, {
    getWebhook: (req) => {
      if (req.workspaceId !== WS || req.id !== WH) throw appError({ code: "webhook_not_found", httpStatus: 404, message: "Webhook not found" });
      return { webhook };
    },
    listDeliveries(req) {
      const limit = Math.min(req.limit || 50, 200);
      let start = 0;
      if (req.cursor) {
        start = deliveries.findIndex((d) => cursorOf(d) === req.cursor) + 1;
        if (start === 0) throw appError({ code: "invalid_cursor", httpStatus: 400, message: "cursor is not one this API returned" });
      }
      const page = deliveries.slice(start, start + limit);
      return { deliveries: page, nextCursor: start + limit < deliveries.length ? cursorOf(page[page.length - 1]) : "" };
    },
    redeliverDelivery(req) {
      redelivered.push(req);
      return { delivery: deliveries.find((d) => d.id === req.deliveryId) };
    },
    updateWebhook(req) {
      updated.push(req);
      webhook = create(WebhookSchema, { ...webhook, status: req.status ?? webhook.status });
      return { webhook };
    },
  });
});

describe("console: a webhook's deliveries, retry and disable", () => {
  let browser: ConsoleBrowser;

  beforeAll(async () => {
    browser = await consoleGateway(transport, {
      secret: "console-webhooks-test-secret-0123456789ab", name: "console-webhooks-test", authCacheMs: 0,
      clients: { webhooks: createClient(WebhookService, transport) },
    });
  });
  beforeEach(reset);

  async function signIn(apiKey: string): Promise<Jar> {
    const jar = new Jar();
    const page = await browser.get("/console/sign-in", jar);
    const res = await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey, next: "/console/webhooks" });
    expect(res.statusCode).toBe(303);
    return jar;
  }
  const rowIds = (html: string) => [...html.matchAll(/<tr data-delivery="(whd_\d+)">/g)].map((m) => m[1]);
  const olderLink = (html: string) => /<a class="button secondary" rel="next" href="([^"]+)">Older deliveries<\/a>/.exec(html)?.[1]?.replace(/&#38;|&amp;/g, "&");

  it("pages the deliveries 25 at a time, newest first, with Older and Newest links", async () => {
    const jar = await signIn("mr_test_hooks_admin");
    const first = await browser.get(`/console/webhooks/${WH}`, jar);
    expect(first.statusCode).toBe(200);
    expect(rowIds(first.body)).toEqual(deliveries.slice(0, 25).map((d) => d.id));
    expect(first.body).not.toContain("Newest deliveries");
    const next = olderLink(first.body);
    expect(next).toMatch(new RegExp(`^/console/webhooks/${WH}\\?cursor=[A-Za-z0-9_-]+#deliveries-h$`));
    const second = await browser.get(next!.replace(/#.*/, ""), jar);
    expect(rowIds(second.body)).toEqual(deliveries.slice(25, 50).map((d) => d.id));
    expect(second.body).toContain(`<a class="button secondary" href="/console/webhooks/${WH}#deliveries-h">Newest deliveries</a>`);
    const third = await browser.get(olderLink(second.body)!.replace(/#.*/, ""), jar);
    expect(rowIds(third.body)).toEqual(deliveries.slice(50).map((d) => d.id));
    expect(olderLink(third.body)).toBeUndefined();
    // The health and per-event summaries still read the last 200, whatever the page.
    expect(third.body).toContain("of the last 60");
  });

  it("answers a made-up cursor with a 400 page, never a 500", async () => {
    const jar = await signIn("mr_test_hooks_admin");
    for (const cursor of ["bm9wZQ", "a%20b%3Cscript%3Ealert(1)"]) {
      const res = await browser.get(`/console/webhooks/${WH}?cursor=${cursor}`, jar);
      expect(res.statusCode, cursor).toBe(400);
      expect(res.body).not.toContain("<script>alert");
    }
  });

  it("retries a failed delivery and resends a delivered one; a queued one has no button", async () => {
    const jar = await signIn("mr_test_hooks_admin");
    const page = await browser.get(`/console/webhooks/${WH}`, jar);
    const row = (id: string) => new RegExp(`<tr data-delivery="${id}">[\\s\\S]*?</tr>`).exec(page.body)?.[0] ?? "";
    expect(row(did(59))).toMatch(/aria-label="Retry EMAIL_&lt;b&gt; delivery whd_0+59">Retry<\/button>/);
    expect(row(did(59))).toContain(">Failed<");
    expect(row(did(58))).not.toContain("<button");
    expect(row(did(58))).toContain("queued");
    expect(row(did(57))).toContain(">Resend</button>");
    const res = await browser.post(`/console/webhooks/${WH}/deliveries/${did(59)}/redeliver`, jar, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(303);
    expect(redelivered).toEqual([expect.objectContaining({ workspaceId: WS, webhookId: WH, deliveryId: did(59) })]);
    expect((await browser.get(res.headers.location as string, jar)).body).toContain("Delivery queued again");
  });

  it("disables the webhook (pause) after a confirmation, then enables it", async () => {
    const jar = await signIn("mr_test_hooks_admin");
    const page = await browser.get(`/console/webhooks/${WH}`, jar);
    expect(page.body).toMatch(/<form method="post" action="\/console\/webhooks\/wh_a+\/status" data-confirm="Disable this webhook\?[^"]*">.*name="status" value="PAUSED"><button type="submit" class="secondary">Disable<\/button>/);
    const off = await browser.post(`/console/webhooks/${WH}/status`, jar, { _csrf: csrfOf(page.body), status: "PAUSED" });
    expect(off.statusCode).toBe(303);
    expect(updated.map((u) => u.status)).toEqual([WebhookStatus.PAUSED]);
    const paused = await browser.get(`/console/webhooks/${WH}`, jar);
    expect(paused.body).toContain("Webhook disabled: deliveries are held");
    expect(paused.body).toContain('<span class="badge warn">Paused</span>');
    expect(paused.body).toMatch(/name="status" value="ACTIVE"><button type="submit" class="secondary">Enable<\/button>/);
    await browser.post(`/console/webhooks/${WH}/status`, jar, { _csrf: csrfOf(paused.body), status: "ACTIVE" });
    expect(updated.map((u) => u.status)).toEqual([WebhookStatus.PAUSED, WebhookStatus.ACTIVE]);
  });

  it("shows a read-only session the deliveries and pages, without Retry, Disable or the secret", async () => {
    const jar = await signIn("mr_test_hooks_viewer");
    const page = await browser.get(`/console/webhooks/${WH}`, jar);
    expect(page.statusCode).toBe(200);
    expect(rowIds(page.body)).toHaveLength(25);
    expect(olderLink(page.body)).toBeTruthy();
    expect(page.body).not.toMatch(/>(Retry|Resend|Disable|Enable)<\/button>/);
    expect(page.body).not.toContain("whsec_x");
    const res = await browser.post(`/console/webhooks/${WH}/deliveries/${did(59)}/redeliver`, jar, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(403);
    expect(redelivered).toHaveLength(0);
  });
});
