import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSystem, type TestSystem } from "../harness/system.js";
import { KIND, otlpEnv, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../harness/otlp-receiver.js";

/**
 * Issue 33: work that runs later than the request that asked for it gets a trace of its own,
 * linked to that request (OpenTelemetry links): a scheduled email's release, and the page jobs
 * of a broadcast. Real processes export to an OTLP/HTTP endpoint the test runs.
 */

const KEY = "mr_test_links_key_1";
const WS = "ws_links";


const person = (i: number) => ({ email: `reader${i}@example.test`, firstName: `R${i}`, subscribed: true, properties: {} });

describe("traces of later work link to the request that asked for it", () => {
  let receiver: OtlpReceiver;
  let sys: TestSystem;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    sys = await startSystem({
      env: otlpEnv(receiver),
      bootstrap: {
        workspaces: [{
          id: WS, name: "Links", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 10_000, sendingAccountNew: false,
          // Twenty contacts: an A/B test share of half leaves a rest (the chance of none is 2^-20).
          contacts: Array.from({ length: 20 }, (_, i) => person(i)),
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "broadcast", "gateway"],
    });
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY, body });
  const tree = (spans: ReceivedSpan[]) => spans.map((s) => `  ${s.service} ${s.name} ${s.traceId}/${s.spanId}<-${s.parentSpanId ?? "root"} links=${s.links.map((l) => l.traceId).join(",")}`).join("\n");
  /** The gateway's span of the request with this id: its trace is the request's. */
  const requestSpan = (spans: ReceivedSpan[], requestId: string) =>
    spans.find((s) => s.service === "mailroom-gateway" && s.kind === KIND.SERVER && s.attributes["mailroom.request_id"] === requestId);
  /** The chain from `span` up to its trace's root, within `trace`. */
  const ancestry = (trace: ReceivedSpan[], span: ReceivedSpan) => {
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const chain: ReceivedSpan[] = [];
    for (let s: ReceivedSpan | undefined = span; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined) chain.push(s);
    return chain;
  };

  it("a scheduled email is delivered in a trace of its own whose root links to the request that scheduled it", async () => {
    const res = await api("POST", "/v1/emails", {
      from: "Acme <team@acme.test>", to: "later@example.test", subject: "Later", html: "<p>Later.</p>",
      sendAt: new Date(Date.now() + 2_000).toISOString(),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.email.status).toBe("SCHEDULED");
    const emailId = res.body.email.id as string;
    const requestId = res.headers.get("x-request-id")!;

    const releaseOf = (all: ReceivedSpan[]) => all.find((s) => s.name === "email scheduled send" && s.attributes["mailroom.email_id"] === emailId);
    const spans = await receiver.waitFor((all) => {
      const release = releaseOf(all);
      return !!requestSpan(all, requestId) && !!release && all.some((s) => s.traceId === release.traceId && s.name === "smtp send");
    }, 30_000).catch(async (err) => {
      throw new Error(`${err.message}\n--- email log ---\n${await sys.log("email")}`);
    });
    // Delivered, at its time (not within its request).
    const delivered = Date.now() + 20_000;
    while (!sys.sink!.messages.some((m) => m.to.includes("later@example.test")) && Date.now() < delivered) await new Promise((r) => setTimeout(r, 100));
    expect(sys.sink!.messages.some((m) => m.to.includes("later@example.test"))).toBe(true);
    const request = requestSpan(spans, requestId)!;
    const release = releaseOf(spans)!;
    const trace = spans.filter((s) => s.traceId === release.traceId);
    const shown = `request trace ${request.traceId}\n${tree(trace)}`;

    // A new trace, rooted at the release, linked to the request's (to the email service's SendEmail span in it).
    expect(release.traceId, shown).not.toBe(request.traceId);
    expect(release.parentSpanId, shown).toBeUndefined();
    expect(release.service).toBe("mailroom-email");
    expect(release.links, shown).toHaveLength(1);
    expect(release.links[0]).toMatchObject({ traceId: request.traceId, attributes: { "mailroom.link": "created_by" } });
    const sendEmail = spans.find((s) => s.spanId === release.links[0].spanId);
    expect(sendEmail, shown).toMatchObject({ service: "mailroom-email", kind: KIND.SERVER, traceId: request.traceId });
    expect(sendEmail!.name.endsWith("/SendEmail")).toBe(true);
    expect(release.attributes).toMatchObject({ "mailroom.email_id": emailId, "mailroom.workspace_id": WS });

    // The delivery job's publish, delivery's handling and the SMTP attempt hang below the release.
    const publish = trace.find((s) => s.kind === KIND.PRODUCER && s.attributes["messaging.destination.name"] === "mail.delivery.transactional");
    const handling = trace.find((s) => s.service === "mailroom-delivery" && s.kind === KIND.CONSUMER);
    const smtp = trace.find((s) => s.name === "smtp send");
    expect(publish, shown).toBeDefined();
    expect(handling, shown).toBeDefined();
    expect(ancestry(trace, publish!)).toContain(release);
    expect(handling!.parentSpanId).toBe(publish!.spanId);
    expect(smtp, shown).toBeDefined();
    expect(ancestry(trace, smtp!)).toContain(handling);
    // And none of it landed in the request's trace: that one ended with the 200.
    expect(spans.filter((s) => s.traceId === request.traceId).some((s) => s.kind === KIND.PRODUCER && s.attributes["messaging.destination.name"] === "mail.delivery.transactional")).toBe(false);
  }, 90_000);

  it("every page job of a broadcast is published in a trace linked to the schedule request; an A/B test's rest also to the winner's choice", async () => {
    const created = await api("POST", "/v1/broadcasts", {
      name: "Linked", subject: "News for {{firstName}}", fromEmail: "news@acme.test", fromName: "Acme",
      html: "<p>Hi {{firstName}}</p>", audience: { all: true },
      abTest: { variants: [{ subject: "Alpha {{firstName}}" }, { subject: "Beta {{firstName}}" }], testShare: 0.5, metric: "opens", waitFor: 600 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    const scheduled = await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const scheduleRequestId = scheduled.headers.get("x-request-id")!;

    const pageSubject = `mail.delivery.broadcast.${id}.page`;
    const pagePublishes = (all: ReceivedSpan[]) => all.filter((s) => s.kind === KIND.PRODUCER && s.attributes["messaging.destination.name"] === pageSubject);
    const recipientsReceived = () => sys.sink!.messages.filter((m) => m.raw.includes("Alpha R") || m.raw.includes("Beta R")).length;

    // The test share goes out (a page job per variant), then the broadcast waits for its winner.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const b = (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast;
      if (b.abTest?.state === "waiting") break;
      if (Date.now() > deadline) throw new Error(`the broadcast never waited for its winner: ${JSON.stringify(b)}\n${await sys.log("broadcast")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const chosen = await api("POST", `/v1/broadcasts/${id}/ab/winner`, { variant: 1 });
    expect(chosen.status, JSON.stringify(chosen.body)).toBe(200);
    const choiceRequestId = chosen.headers.get("x-request-id")!;
    const everyone = Date.now() + 30_000;
    while (recipientsReceived() < 20 && Date.now() < everyone) await new Promise((r) => setTimeout(r, 100));
    expect(recipientsReceived()).toBe(20);

    // Every page job's publish is in place, and delivery handled each of them below it.
    const spans = await receiver.waitFor((all) => {
      const pubs = pagePublishes(all);
      const choice = requestSpan(all, choiceRequestId);
      // Both parts out (published before and after the choice), each page handled by delivery.
      return !!requestSpan(all, scheduleRequestId) && !!choice && pubs.some((p) => p.startNs < choice.startNs) && pubs.some((p) => p.startNs > choice.startNs) &&
        pubs.every((p) => all.some((s) => s.kind === KIND.CONSUMER && s.parentSpanId === p.spanId)) &&
        // The root of each page's trace ends after its publishes and may come in a later export batch.
        pubs.every((p) => ancestry(all.filter((s) => s.traceId === p.traceId), p).at(-1)!.parentSpanId === undefined);
    }, 30_000);
    const scheduleTrace = requestSpan(spans, scheduleRequestId)!.traceId;
    const choice = requestSpan(spans, choiceRequestId)!;
    const choiceTrace = choice.traceId;
    const pubs = pagePublishes(spans);

    for (const pub of pubs) {
      const trace = spans.filter((s) => s.traceId === pub.traceId);
      const shown = `schedule trace ${scheduleTrace}, choice trace ${choiceTrace}\n${tree(trace)}`;
      const root = ancestry(trace, pub).at(-1)!;
      // A trace of the broadcast's sending, not the request's, whose root links back to the schedule request.
      expect(pub.traceId, shown).not.toBe(scheduleTrace);
      expect(root.parentSpanId, shown).toBeUndefined();
      expect(root, shown).toMatchObject({ name: "broadcast send", service: "mailroom-broadcast", attributes: { "mailroom.broadcast_id": id, "mailroom.workspace_id": WS } });
      expect(root.links.find((l) => l.attributes["mailroom.link"] === "scheduled_by")?.traceId, shown).toBe(scheduleTrace);
      // The rest went out because a user chose the winner: its trace links to that request too.
      if (pub.startNs > choice.startNs) expect(root.links.find((l) => l.attributes["mailroom.link"] === "winner_chosen_by")?.traceId, shown).toBe(choiceTrace);
      // Delivery's handling of the page continues the page's trace.
      expect(spans.find((s) => s.kind === KIND.CONSUMER && s.parentSpanId === pub.spanId), shown).toMatchObject({ service: "mailroom-delivery", traceId: pub.traceId });
    }
    // The schedule request's own trace ended with its answer: no page job was published in it.
    expect(pubs.some((p) => p.traceId === scheduleTrace || p.traceId === choiceTrace)).toBe(false);
  }, 120_000);
});
