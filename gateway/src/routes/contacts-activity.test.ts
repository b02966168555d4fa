import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { appError } from "@mailroom/kit/errors.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { ContactSource, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { RunStatus } from "@mailroom/proto/automation/v1/automation_pb.js";
import { DeliveryState } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";

/**
 * GET /v1/contacts/:id/activity over fake units: every source paged by its own cursor (tiny
 * pages, so the merge crosses their page boundaries), merged newest first into pages of the
 * asked size with nothing lost or repeated; another workspace's contact is a 404.
 */
const CONTACT = "ctc_00000000000000000000000001";
const at = (day: number, hour = 0) => timestampFromDate(new Date(Date.UTC(2026, 2, day, hour)));
const iso = (day: number, hour = 0) => new Date(Date.UTC(2026, 2, day, hour)).toISOString();
/** Pages `all` by an index cursor, `size` at most per call whatever was asked. */
const paged = <T>(all: T[], cursor: string, limit: number, size = 2) => {
  const from = cursor ? Number(cursor) : 0;
  const n = Math.min(limit || size, size);
  const items = all.slice(from, from + n);
  const hasMore = from + n < all.length;
  return { items, page: { hasMore, nextCursor: hasMore ? String(from + n) : "" } };
};

const engagements = [
  { kind: "bounced", messageId: "trs_b", broadcastId: "", at: at(20) },
  { kind: "clicked", messageId: "cmp_1", broadcastId: "cmp_1", at: at(12) },
  { kind: "opened", messageId: "cmp_1", broadcastId: "cmp_1", at: at(11) },
  { kind: "delivered", messageId: "cmp_1", broadcastId: "cmp_1", at: at(10) },
  { kind: "delivered", messageId: "trs_a", broadcastId: "", at: at(5) },
];
const events = [{ name: "order.paid", properties: { total: 12 }, timestamp: at(15) }, { name: "signup", properties: {}, timestamp: at(3) }];
const runs = [{ id: "run_2", automationId: "aut_1", status: RunStatus.ACTIVE, startedAt: at(14) }, { id: "run_1", automationId: "aut_1", status: RunStatus.COMPLETED, startedAt: at(4) }];
const deliveries = [{ id: "whd_1", webhookId: "wh_1", eventType: "CONTACT_CREATED", state: DeliveryState.FAILED, attempts: 5, createdAt: at(2, 1) }];

const clients = {
  accounts: {
    async authenticate({ apiKey }: { apiKey: string }) {
      const ws = { mr_test_activity_a: "ws_a", mr_test_activity_b: "ws_b" }[apiKey];
      if (!ws) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: ws, keyId: `key_${ws}`, scopes: ["api_read"], role: "VIEWER", memberId: "" };
    },
  },
  contacts: {
    async getContact({ workspaceId, contactId }: { workspaceId: string; contactId: string }) {
      if (workspaceId !== "ws_a" || contactId !== CONTACT) throw appError({ code: "contact_not_found", httpStatus: 404, message: "No contact with this id exists in the workspace." });
      return { contact: { id: CONTACT, email: "ann@example.test", source: ContactSource.PUBLIC_API, createdAt: at(2) } };
    },
    async listContactEvents({ page }: { page: { cursor: string; limit: number } }) {
      const p = paged(events, page.cursor, page.limit, 1);
      return { events: p.items, page: p.page };
    },
    async checkSuppression() {
      return { suppressed: [{ email: "ann@example.test", reason: SuppressionReason.UNSUBSCRIBED, detail: "one-click", createdAt: at(21) }] };
    },
  },
  audiences: {
    async listContactEngagement({ page }: { page: { cursor: string; limit: number } }) {
      const p = paged(engagements, page.cursor, page.limit);
      return { engagements: p.items, page: p.page };
    },
  },
  automation: {
    async listRuns({ contactId, page }: { contactId: string; page: { cursor: string; limit: number } }) {
      expect(contactId).toBe(CONTACT);
      const p = paged(runs, page.cursor, page.limit, 1);
      return { runs: p.items, page: p.page };
    },
  },
  webhooks: { async listContactDeliveries() { return { deliveries }; } },
  email: {
    async getEmail({ id }: { id: string }) {
      if (id === "trs_b") throw appError({ code: "email_not_found", httpStatus: 404, message: "gone" });
      return { email: { id, status: EmailStatus.DELIVERED, subject: "Welcome" } };
    },
  },
};

describe("GET /v1/contacts/:id/activity", () => {
  let app: FastifyInstance;
  let api: DocumentedCalls;
  beforeAll(async () => {
    app = await buildGateway({
      config: { ...loadConfig({}), secret: "contact-activity-gateway-secret-0123456789" },
      logger: createLogger("gateway-contact-activity-test", "silent"),
      clients: clients as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    });
    api = await documentedCalls(app, { authorization: "Bearer mr_test_activity_a" });
  });
  afterAll(async () => app?.close());
  const OP = "GET /v1/contacts/{id}/activity";

  it("merges every source newest first, page after page, nothing lost or repeated", async () => {
    const seen: Array<{ type: string; occurredAt: string }> = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.call(OP, `/v1/contacts/${CONTACT}/activity?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.statusCode).toBe(200);
      const page = res.data.activity;
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items);
      cursor = page.cursor;
      expect(page.hasMore).toBe(cursor !== null);
      pages++;
    } while (cursor && pages < 20);
    expect(seen.map((i) => `${i.type}@${i.occurredAt.slice(5, 13)}`)).toEqual([
      "unsubscribed@03-21T00", "email_bounced@03-20T00", "event@03-15T00", "automation_run@03-14T00", "email_clicked@03-12T00",
      "email_opened@03-11T00", "email_sent@03-10T00", "email_sent@03-05T00", "automation_run@03-04T00", "event@03-03T00",
      "webhook_delivery@03-02T01", "contact_created@03-02T00",
    ]);
    expect(pages).toBe(4);
    expect(seen[0]).toEqual({ type: "unsubscribed", occurredAt: iso(21), reason: "one-click" });
    // A transactional email's status and subject come from its record; an erased one keeps neither.
    expect(seen.find((i) => i.occurredAt === iso(5))).toEqual({ type: "email_sent", occurredAt: iso(5), emailId: "trs_a", emailStatus: "DELIVERED", subject: "Welcome" });
    expect(seen[1]).toEqual({ type: "email_bounced", occurredAt: iso(20), emailId: "trs_b" });
    expect(seen.find((i) => i.type === "email_clicked")).toEqual({ type: "email_clicked", occurredAt: iso(12), broadcastId: "cmp_1" });
    expect(seen.find((i) => i.type === "webhook_delivery")).toMatchObject({ webhookId: "wh_1", deliveryId: "whd_1", eventType: "CONTACT_CREATED", deliveryState: "FAILED", attempts: 5 });
    expect(seen.find((i) => i.type === "event")).toMatchObject({ name: "order.paid", properties: { total: 12 } });
  });

  it("answers one page of everything when asked for more than there is", async () => {
    const res = await api.call(OP, `/v1/contacts/${CONTACT}/activity?limit=100`);
    expect(res.data.activity).toMatchObject({ cursor: null, hasMore: false });
    expect(res.data.activity.items).toHaveLength(12);
  });

  it("is a 404 for another workspace's contact and a 400 for a bad cursor or limit", async () => {
    const other = await api.call(OP, `/v1/contacts/${CONTACT}/activity`, undefined, { authorization: "Bearer mr_test_activity_b" });
    expect(other.statusCode).toBe(404);
    expect(other.data.code).toBe("contact_not_found");
    for (const q of ["cursor=not-a-cursor", `cursor=${Buffer.from('{"mystery":[ "",1]}').toString("base64url")}`, "limit=0", "limit=101"]) {
      const res = await api.call(OP, `/v1/contacts/${CONTACT}/activity?${q}`);
      expect(res.statusCode, q).toBe(400);
    }
  });

  it("drove every documented response of the route", () => {
    expect(api.undriven((p) => p === "/v1/contacts/{id}/activity")).toEqual([]);
  });
});
