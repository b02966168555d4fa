import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ConnectError, Code, createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { ContactService, ContactStatus } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { TopicService } from "@mailroom/proto/audience/v1/topics_pb.js";
import { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { notFound } from "@mailroom/kit/errors.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { isOneClickBody, registerUnsubscribe } from "./unsubscribe.js";

/**
 * The one-click unsubscribe of a topic broadcast's message (DESIGN §9.4): the RFC 8058 POST leaves
 * that topic only; everything else (a broadcast without a topic, a transactional message, the
 * page's own button, a contact or topic gone) unsubscribes from everything as before.
 */

const SECRET = "unsubscribe-topic-test-secret-0123456789";
const token = (contentId: string, contactId = "ctc_1") =>
  signRecipientToken(SECRET, { workspaceId: "ws_a", messageId: "", email: "ann@example.test", contactId, contentId });
const ONE_CLICK = "List-Unsubscribe=One-Click";

describe("one-click unsubscribe of topic broadcasts", () => {
  let app: FastifyInstance;
  const calls: string[] = [];
  let broadcastDown = false;
  let contactGone = false;

  beforeAll(async () => {
    const transport = memoryTransport(({ service }) => {
      service(ContactService, {
        addSuppression(req) { calls.push(`suppress ${req.email}`); return {}; },
        updateContact(req) { calls.push(`contact ${ContactStatus[req.contact!.status!]}`); return {}; },
      });
      service(BroadcastService, {
        getBroadcastTopic(req) {
          calls.push(`topic? ${req.workspaceId} ${req.id}`);
          if (broadcastDown) throw new ConnectError("connection refused", Code.Unavailable);
          if (req.id === "cmp_gone") throw notFound("broadcast_not_found", "no");
          return { topicId: req.id === "cmp_news" ? "top_news" : "" };
        },
      });
      service(TopicService, {
        setContactTopics(req) {
          if (contactGone) throw notFound("contact_not_found", "no");
          const ref = req.contact?.ref;
          calls.push(`choose ${ref?.case}=${ref?.value} ${req.choices.map((c) => `${c.topicId}:${c.subscribed}`).join(",")}`);
          return { contactId: "ctc_1", topics: [] };
        },
      });
    });
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: SECRET, publicUrl: "https://mail.acme.test" },
      logger: createLogger("gateway-test", "silent"),
      clients: {
        contacts: createClient(ContactService, transport),
        broadcast: createClient(BroadcastService, transport),
        topics: createClient(TopicService, transport),
      } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 1000,
    };
    app = await buildGateway(deps, { api: [], public: [registerUnsubscribe] });
  });
  afterAll(async () => app?.close());
  beforeEach(() => {
    calls.length = 0;
    broadcastDown = false;
    contactGone = false;
  });

  const post = (t: string, payload?: string, contentType = "application/x-www-form-urlencoded") =>
    app.inject({ method: "POST", url: `/u/${t}`, ...(payload === undefined ? {} : { payload, headers: { "content-type": contentType } }) });

  it("leaves the topic only (no suppression, status unchanged), asking the broadcast service once per broadcast", async () => {
    const first = await post(token("cmp_news"), ONE_CLICK);
    expect([first.statusCode, first.json()]).toEqual([200, { unsubscribed: true }]);
    expect(await post(token("cmp_news", "ctc_2"), ONE_CLICK).then((r) => r.statusCode)).toBe(200);
    expect(calls).toEqual(["topic? ws_a cmp_news", "choose contactId=ctc_1 top_news:false", "choose contactId=ctc_2 top_news:false"]);
  });

  it("takes the multipart form of RFC 8058 too", async () => {
    const body = `--b\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--b--\r\n`;
    expect((await post(token("cmp_news"), body, "multipart/form-data; boundary=b")).statusCode).toBe(200);
    expect(calls.filter((c) => c.startsWith("choose") || c.startsWith("suppress"))).toEqual(["choose contactId=ctc_1 top_news:false"]);
  });

  it("unsubscribes from everything for the page's button, a broadcast without a topic or gone, a transactional message, or a contact gone", async () => {
    const everything = ["suppress ann@example.test", "contact UNSUBSCRIBED"];
    for (const [label, t, body] of [
      ["the page's button", token("cmp_news"), undefined],
      ["no topic", token("cmp_plain"), ONE_CLICK],
      ["broadcast gone", token("cmp_gone"), ONE_CLICK],
      ["transactional", token("trs_01jqz8k4m2x7v9c3n5b6t1w0ye"), ONE_CLICK],
    ] as Array<[string, string, string | undefined]>) {
      calls.length = 0;
      expect((await post(t, body)).statusCode).toBe(200);
      expect([label, calls.filter((c) => !c.startsWith("topic?"))]).toEqual([label, everything]);
    }
    calls.length = 0;
    contactGone = true;
    expect((await post(token("cmp_news", "ctc_9"), ONE_CLICK)).statusCode).toBe(200);
    expect(calls).toEqual(everything);
  });

  it("unsubscribes from everything when the broadcast service does not answer (an unsubscribe is never lost), and asks again next time", async () => {
    broadcastDown = true;
    const res = await post(token("cmp_down"), ONE_CLICK);
    expect(res.statusCode).toBe(200);
    expect(calls).toEqual(["topic? ws_a cmp_down", "suppress ann@example.test", "contact UNSUBSCRIBED"]);
    calls.length = 0;
    broadcastDown = false;
    expect((await post(token("cmp_down"), ONE_CLICK)).statusCode).toBe(200);
    expect(calls[0]).toBe("topic? ws_a cmp_down");
  });

  it("recognises only the one-click body", () => {
    expect(isOneClickBody(ONE_CLICK)).toBe(true);
    expect(isOneClickBody("a=1&List-Unsubscribe=One-Click")).toBe(true);
    for (const body of [undefined, "", "List-Unsubscribe=Other", "One-Click", {}]) expect(isOneClickBody(body)).toBe(false);
  });
});
