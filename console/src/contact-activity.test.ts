import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { RunStatus } from "@mailroom/proto/automation/v1/automation_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { directoryRoutes, memoryDirectory } from "../../services/audience/src/testing.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";

/**
 * The contact page's Activity timeline, over the real audience unit (in memory) and fake units:
 * newest first, 25 a page with an "Older activity" link, user data escaped, a stale cursor a
 * message (never a 500), and another workspace's contact a 404.
 */
const KEYS = { a: "mr_test_console_activity_a", b: "mr_test_console_activity_b" };
const at = (n: number) => timestampFromDate(new Date(Date.UTC(2026, 0, 1) + n * 60_000));
/** 30 opens of a broadcast, one a minute, and one event with a hostile name. */
const engagements = Array.from({ length: 30 }, (_, i) => ({ kind: "opened", messageId: `cmp_${29 - i}`, broadcastId: `cmp_${29 - i}`, at: at(1000 - i) }));

describe("the contact page's activity timeline", () => {
  let browser: ConsoleBrowser;
  let contactId = "";
  let otherId = "";
  const jar = new Jar();

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.loadJson(JSON.stringify({ workspaces: [
      { id: "ws_ca", name: "A", apiKeys: [{ key: KEYS.a, scopes: ["api_user"] }] },
      { id: "ws_cb", name: "B", apiKeys: [{ key: KEYS.b, scopes: ["api_user"] }] },
    ] }));
    contactId = (await dir.contacts.create("ws_ca", { email: "ann@example.test", source: "PUBLIC_API" }))._id;
    otherId = (await dir.contacts.create("ws_cb", { email: "bob@example.test", source: "PUBLIC_API" }))._id;
    await dir.events.record("ws_ca", [{ email: "ann@example.test", name: "order.paid", properties: { note: "<script>alert(1)</script>" }, timestamp: new Date(Date.UTC(2026, 0, 1) + 2000 * 60_000).toISOString() }]);
    const transport = memoryTransport(directoryRoutes(dir));
    browser = await consoleGateway(transport, {
      secret: "console-contact-activity-secret-0123456789", name: "console-contact-activity", authCacheMs: 0,
      clients: {
        audiences: {
          async listContactEngagement({ workspaceId, page }: { workspaceId: string; page: { cursor: string; limit: number } }) {
            expect(workspaceId).toBe("ws_ca");
            const from = page.cursor ? Number(page.cursor) : 0;
            const items = engagements.slice(from, from + page.limit);
            const more = from + page.limit < engagements.length;
            return { engagements: items, page: { hasMore: more, nextCursor: more ? String(from + page.limit) : "" } };
          },
        },
        automation: {
          async listRuns() { return { runs: [{ id: "run_1", automationId: "aut_1", status: RunStatus.ACTIVE, startedAt: at(990) }], page: { hasMore: false } }; },
          async listAutomations() { return { automations: [], page: { hasMore: false } }; },
        },
        webhooks: {
          async listContactDeliveries() { return { deliveries: [] }; },
          async listWebhooks() { return { webhooks: [] }; },
        },
        email: { async getEmail() { throw new Error("not asked: no transactional email here"); } },
      },
    });
    const page = await browser.get("/console/sign-in", jar);
    expect((await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey: KEYS.a })).statusCode).toBe(303);
  }, 60_000);
  afterAll(async () => browser?.app.close());

  const timeline = (html: string) => [...html.matchAll(/<li[^>]*data-type="([a-z_]+)"/g)].map((m) => m[1]);

  it("shows the newest 25, escaped, with a link to the older ones, and the older ones after it", async () => {
    const first = await browser.get(`/console/contacts/${contactId}`, jar);
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain(`<h2 id="act-tl-h">Activity</h2>`);
    const types = timeline(first.body);
    expect(types).toHaveLength(25);
    expect(first.body).not.toContain("<script>alert(1)</script>");
    expect(types).toContain("event");
    const older = /<a href="([^"]+)#act-tl-h" rel="next">Older activity<\/a>/.exec(first.body)?.[1];
    expect(older).toBeTruthy();
    const second = await browser.get(older!.replace(/&amp;/g, "&"), jar);
    expect(second.statusCode).toBe(200);
    const rest = timeline(second.body);
    // 30 opens, one run, the creation and the event: all of them across the two pages, once each.
    expect(types.length + rest.length).toBe(33);
    const all = [...types, ...rest];
    expect(all.filter((t) => t === "email_opened")).toHaveLength(30);
    expect(all).toContain("contact_created");
    expect(all).toContain("automation_run");
    expect(second.body).not.toContain('rel="next"');
    expect(second.body).toContain(">Newest</a>");
  });

  it("answers a stale or forged cursor with a message, and another workspace's contact with a 404", async () => {
    const res = await browser.get(`/console/contacts/${contactId}?activity=forged`, jar);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("This page of activity does not exist");
    expect((await browser.get(`/console/contacts/${otherId}`, jar)).statusCode).toBe(404);
  });
});
