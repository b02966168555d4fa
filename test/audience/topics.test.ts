/**
 * Topics and the preference centre (DESIGN §9.4) through the public API: the gateway and the
 * accounts and audience units as real processes over the embedded store. Topic CRUD, a contact's choices with the
 * topics' defaults, the refusals, workspace isolation, and the manage page ({{manageUrl}}) that
 * lists the topics with the recipient's state and saves its choices, reached with a real
 * signed recipient token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

const A = "ws_topics_a";
const B = "ws_topics_b";
const KEY_A = `mr_test_${A}_1`;
const KEY_B = `mr_test_${B}_1`;

describe("topics and the preference centre (real processes)", () => {
  let sys: TestSystem;
  const a = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY_A, body });
  const b = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY_B, body });

  beforeAll(async () => {
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "email", "automation", "gateway"], // email, automation: the contact export lists the emails to the address and the runs
      bootstrap: {
        workspaces: [
          { id: A, name: "A", timezone: "UTC", apiKeys: [{ key: KEY_A, scopes: ["api_user"] }] },
          { id: B, name: "B", timezone: "UTC", apiKeys: [{ key: KEY_B, scopes: ["api_user"] }] },
        ],
      },
    });
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
  });

  let news = "";
  let events = "";
  let ann = "";

  it("creates, reads, changes, lists and deletes topics", async () => {
    const created = await a("POST", "/v1/topics", { name: "News", description: "Once a month", defaultSubscription: "OPT_OUT" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toEqual({
      topic: { id: expect.stringMatching(/^top_[0-9a-z]{26}$/), name: "News", description: "Once a month", defaultSubscription: "OPT_OUT", createdAt: expect.any(String) },
    });
    news = created.body.topic.id;
    events = (await a("POST", "/v1/topics", { name: "Events", defaultSubscription: "OPT_IN" })).body.topic.id;
    const scratch = (await a("POST", "/v1/topics", { name: "Scratch", defaultSubscription: "OPT_IN" })).body.topic.id;

    expect((await a("GET", `/v1/topics/${news}`)).body).toEqual(created.body);
    const patched = await a("PATCH", `/v1/topics/${events}`, { name: "Meetups", description: "In person" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.topic).toEqual({
      id: events, name: "Meetups", description: "In person", defaultSubscription: "OPT_IN", createdAt: expect.any(String), updatedAt: expect.any(String),
    });
    expect((await a("PATCH", `/v1/topics/${events}`, { description: null })).body.topic).not.toHaveProperty("description");

    const page1 = await a("GET", "/v1/topics?limit=2");
    expect(page1.status).toBe(200);
    expect(page1.body.topics).toMatchObject({ items: [{ id: news }, { id: events, name: "Meetups" }], hasMore: true, cursor: events });
    const page2 = await a("GET", `/v1/topics?limit=2&cursor=${page1.body.topics.cursor}`);
    expect(page2.body.topics).toEqual({ items: [expect.objectContaining({ id: scratch })], hasMore: false, cursor: null });

    const deleted = await a("DELETE", `/v1/topics/${scratch}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ topic: { id: scratch, name: "Scratch" }, isDeleted: true });
    expect((await a("GET", `/v1/topics/${scratch}`)).status).toBe(404);
    expect((await a("GET", "/v1/topics")).body.topics.items.map((t: { id: string }) => t.id)).toEqual([news, events]);
  });

  it("refuses bad input, taken names and unknown topics with clear 4xx", async () => {
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", "/v1/topics", { name: "News", defaultSubscription: "OPT_IN" }, 409, "topic_name_taken"],
      ["POST", "/v1/topics", { name: "x", defaultSubscription: "SOMETIMES" }, 400, "invalid_request"],
      ["POST", "/v1/topics", { name: "x" }, 400, "invalid_request"],
      ["POST", "/v1/topics", { name: "   ", defaultSubscription: "OPT_IN" }, 400, "invalid_topic"],
      ["POST", "/v1/topics", { name: "a\nb", defaultSubscription: "OPT_IN" }, 400, "invalid_topic"],
      ["POST", "/v1/topics", { name: "x".repeat(101), defaultSubscription: "OPT_IN" }, 400, "invalid_topic"],
      ["POST", "/v1/topics", { name: "x", defaultSubscription: "OPT_IN", color: "red" }, 400, "invalid_request"],
      ["PATCH", `/v1/topics/${events}`, { name: "News" }, 409, "topic_name_taken"],
      ["PATCH", "/v1/topics/top_01jqz8k4m2x7v9c3n5b6t1w0ye", { name: "Nope" }, 404, "topic_not_found"],
      ["GET", "/v1/topics/whatever", undefined, 404, "topic_not_found"],
      ["DELETE", "/v1/topics/top_01jqz8k4m2x7v9c3n5b6t1w0ye", undefined, 404, "topic_not_found"],
      ["GET", "/v1/topics?cursor=nope", undefined, 400, "invalid_cursor"],
      ["GET", "/v1/topics?limit=0", undefined, 400, "invalid_request"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const res = await a(method, path, body);
      expect([res.status, res.body?.code], `${method} ${path} ${JSON.stringify(body)}`).toEqual([status, code]);
    }
  });

  it("a contact's topics: its choices, else the topics' defaults; PUT changes only the topics it names", async () => {
    ann = (await a("POST", "/v1/contacts", { properties: { email: "ann@example.test", firstName: "Ann" } })).body.contact.id;
    const bob = (await a("POST", "/v1/contacts", { properties: { email: "bob@example.test" } })).body.contact.id;
    const defaults = [{ id: news, name: "News", subscribed: true }, { id: events, name: "Meetups", subscribed: false }];
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body).toEqual({ topics: defaults });

    const put = await a("PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: news, subscribed: false }, { id: events, subscribed: true }] });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual({ topics: [{ id: news, name: "News", subscribed: false }, { id: events, name: "Meetups", subscribed: true }] });
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body).toEqual(put.body);
    expect((await a("GET", `/v1/contacts/${bob}/topics`)).body).toEqual({ topics: defaults });
    // Only the named topic changes.
    expect((await a("PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: news, subscribed: true }] })).body.topics)
      .toEqual([{ id: news, name: "News", subscribed: true }, { id: events, name: "Meetups", subscribed: true }]);
    // A topic's default applies to those without a choice: changing it moves Bob, not Ann.
    await a("PATCH", `/v1/topics/${events}`, { defaultSubscription: "OPT_OUT" });
    expect((await a("GET", `/v1/contacts/${bob}/topics`)).body.topics[1]).toEqual({ id: events, name: "Meetups", subscribed: true });
    await a("PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: events, subscribed: false }] });
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics[1].subscribed).toBe(false);
    await a("PATCH", `/v1/topics/${events}`, { defaultSubscription: "OPT_IN" });

    const refusals: Array<[string, string, unknown, number, string]> = [
      ["PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: "top_01jqz8k4m2x7v9c3n5b6t1w0ye", subscribed: true }] }, 400, "unknown_topic"],
      ["PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: news, subscribed: true }, { id: news, subscribed: false }] }, 400, "invalid_request"],
      ["PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: news, subscribed: "yes" }] }, 400, "invalid_request"],
      ["PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: news }] }, 400, "invalid_request"],
      ["PUT", `/v1/contacts/${ann}/topics`, {}, 400, "invalid_request"],
      ["PUT", "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye/topics", { topics: [] }, 404, "contact_not_found"],
      ["GET", "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye/topics", undefined, 404, "contact_not_found"],
    ];
    for (const [method, path, body, status, code] of refusals) {
      const res = await a(method, path, body);
      expect([res.status, res.body?.code], `${method} ${path} ${JSON.stringify(body)}`).toEqual([status, code]);
    }
    // The refused requests changed nothing.
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics.map((t: { subscribed: boolean }) => t.subscribed)).toEqual([true, false]);
    // A contact's data export (DESIGN §9.3) holds its topics, and which of them it chose.
    const exported = await a("GET", `/v1/contacts/${bob}/export`);
    expect(exported.status, JSON.stringify(exported.body)).toBe(200);
    expect(exported.body.topics).toEqual([{ id: news, name: "News", subscribed: true, explicit: false }, { id: events, name: "Meetups", subscribed: false, explicit: false }]);
    expect((await a("GET", `/v1/contacts/${ann}/export`)).body.topics).toEqual([
      { id: news, name: "News", subscribed: true, explicit: true }, { id: events, name: "Meetups", subscribed: false, explicit: true },
    ]);
  });

  it("deleting a topic removes it from every contact", async () => {
    const temp = (await a("POST", "/v1/topics", { name: "Temporary", defaultSubscription: "OPT_IN" })).body.topic.id;
    await a("PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: temp, subscribed: true }] });
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics.map((t: { id: string }) => t.id)).toEqual([news, events, temp]);
    await a("DELETE", `/v1/topics/${temp}`);
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics.map((t: { id: string }) => t.id)).toEqual([news, events]);
    // Recreated under the same name it is a new topic: the old choice does not come back.
    const again = (await a("POST", "/v1/topics", { name: "Temporary", defaultSubscription: "OPT_IN" })).body.topic.id;
    expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics.find((t: { id: string }) => t.id === again)).toEqual({ id: again, name: "Temporary", subscribed: false });
    await a("DELETE", `/v1/topics/${again}`);
  });

  it("one workspace never reaches another's topics or contacts", async () => {
    const bTopic = (await b("POST", "/v1/topics", { name: "News", defaultSubscription: "OPT_IN" })).body.topic.id; // same name: its own
    expect(bTopic).not.toBe(news);
    expect((await b("GET", "/v1/topics")).body.topics.items.map((t: { id: string }) => t.id)).toEqual([bTopic]);
    for (const [method, path, body] of [
      ["GET", `/v1/topics/${news}`, undefined],
      ["PATCH", `/v1/topics/${news}`, { name: "Taken over" }],
      ["DELETE", `/v1/topics/${news}`, undefined],
    ] as const) {
      expect(await b(method, path, body).then((r) => [r.status, r.body.code])).toEqual([404, "topic_not_found"]);
    }
    expect(await b("GET", `/v1/contacts/${ann}/topics`).then((r) => [r.status, r.body.code])).toEqual([404, "contact_not_found"]);
    expect(await b("PUT", `/v1/contacts/${ann}/topics`, { topics: [] }).then((r) => [r.status, r.body.code])).toEqual([404, "contact_not_found"]);
    // B's contact cannot choose A's topic.
    const bAnn = (await b("POST", "/v1/contacts", { properties: { email: "ann@example.test" } })).body.contact.id;
    expect(await b("PUT", `/v1/contacts/${bAnn}/topics`, { topics: [{ id: news, subscribed: false }] }).then((r) => [r.status, r.body.code])).toEqual([400, "unknown_topic"]);
    expect((await b("GET", `/v1/contacts/${bAnn}/topics`)).body).toEqual({ topics: [{ id: bTopic, name: "News", subscribed: false }] });
    expect((await a("GET", `/v1/topics/${news}`)).body.topic.name).toBe("News");
  });

  describe("the manage page", () => {
    const token = () => signRecipientToken(sys.secret, { workspaceId: A, messageId: "", email: "ann@example.test", contactId: ann, contentId: "cmp_topics" });
    const managePage = async (t = token()) => {
      const res = await fetch(`${sys.gatewayUrl}/u/${t}?manage=1`);
      expect(res.status).toBe(200);
      return res.text();
    };
    const checkbox = (html: string, id: string) => html.match(new RegExp(`<input type="checkbox" name="topic" value="${id}"( checked)?`));
    const save = (form: string, headers: Record<string, string> = {}) =>
      fetch(`${sys.gatewayUrl}/u/${token()}/topics`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: sys.gatewayUrl, accept: "text/html", ...headers },
        body: form,
      });

    it("lists the workspace's topics with the recipient's state and keeps unsubscribing from everything", async () => {
      await a("PUT", `/v1/contacts/${ann}/topics`, { topics: [{ id: news, subscribed: true }, { id: events, subscribed: false }] });
      const html = await managePage();
      expect(html).toContain("Manage your subscription");
      expect(html).toContain("is subscribed");
      expect(html).toContain("News");
      expect(html).toContain("Once a month");
      expect(html).toContain("Meetups");
      expect(checkbox(html, news)?.[1]).toBe(" checked");
      expect(checkbox(html, events)).not.toBeNull();
      expect(checkbox(html, events)?.[1]).toBeUndefined();
      expect(html).toContain(`action="/u/${token()}/topics"`);
      // "Unsubscribe from everything" is today's unsubscribe.
      expect(html).toContain(`<form method="post" action="/u/${token()}"><button type="submit">Unsubscribe from everything</button></form>`);
      // B's topic of the same name is not on A's page.
      expect(html.match(/name="topic"/g)).toHaveLength(2);
    });

    it("saves the choices of the form to the contact, and refuses a form from another site", async () => {
      const res = await save(`shown=${news}&shown=${events}&topic=${events}`);
      expect(res.status).toBe(200);
      const page = await res.text();
      expect(page).toContain("Your preferences are saved");
      expect(page).toContain("News: not receiving");
      expect(page).toContain("Meetups: receiving");
      expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics).toEqual([
        { id: news, name: "News", subscribed: false }, { id: events, name: "Meetups", subscribed: true },
      ]);
      const html = await managePage();
      expect(checkbox(html, news)?.[1]).toBeUndefined();
      expect(checkbox(html, events)?.[1]).toBe(" checked");

      const evil = await save(`shown=${news}&topic=${news}`, { origin: "https://evil.test" });
      expect(evil.status).toBe(403);
      expect((await a("GET", `/v1/contacts/${ann}/topics`)).body.topics[0].subscribed).toBe(false);
      // A topic the page did not show keeps its state; an unknown or foreign id is ignored.
      const json = await save(`shown=${news}&topic=${news}&shown=top_01jqz8k4m2x7v9c3n5b6t1w0ye&topic=top_01jqz8k4m2x7v9c3n5b6t1w0ye`, { accept: "application/json" });
      expect(json.status).toBe(200);
      expect(await json.json()).toEqual({ topics: [{ id: news, name: "News", subscribed: true }, { id: events, name: "Meetups", subscribed: true }] });
      expect((await fetch(`${sys.gatewayUrl}/u/forged/topics`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "shown=x" })).status).toBe(404);
    });

    it("a transactional recipient's token (no contact id) finds the contact by its address", async () => {
      const t = signRecipientToken(sys.secret, { workspaceId: A, messageId: "<m@acme.test>", email: "ANN@example.test", contactId: "", contentId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye" });
      expect(checkbox(await managePage(t), news)?.[1]).toBe(" checked");
      // An address that is no contact: the page shows no topics, only the subscription.
      const stranger = signRecipientToken(sys.secret, { workspaceId: A, messageId: "<m@acme.test>", email: "stranger@example.test", contactId: "", contentId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye" });
      const html = await managePage(stranger);
      expect(html).toContain("is subscribed");
      expect(html).not.toContain('name="topic"');
      expect(html).toContain("<button type=\"submit\">Unsubscribe</button>");
    });

    it("unsubscribing from everything still works from the page", async () => {
      const res = await fetch(`${sys.gatewayUrl}/u/${token()}`, { method: "POST", headers: { accept: "text/html" } });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("You are unsubscribed");
      expect((await a("GET", `/v1/contacts/${ann}`)).body.contact.properties.status).toBe("UNSUBSCRIBED");
      const html = await managePage();
      expect(html).toContain("is unsubscribed");
      expect(html).toContain("Your choices apply while the address is subscribed.");
      // The topic choices stay: they apply again after a resubscribe.
      expect(checkbox(html, news)?.[1]).toBe(" checked");
    });

    it("shows topic names and descriptions as text, never as markup", async () => {
      const id = (await a("POST", "/v1/topics", { name: "Tips & <b>tricks</b>", description: `"><script>alert(1)</script>`, defaultSubscription: "OPT_IN" })).body.topic.id;
      const html = await managePage();
      expect(html).toContain("Tips &#38; &#60;b&#62;tricks&#60;/b&#62;");
      expect(html).toContain("&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;");
      expect(html).not.toContain("<script>");
      expect(html).not.toContain("<b>tricks");
      await a("DELETE", `/v1/topics/${id}`);
    });
  });
});
