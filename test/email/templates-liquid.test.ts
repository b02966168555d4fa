import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime, { type Email } from "postal-mime";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * Templates that branch and loop (issue 47, DESIGN §10.2) through the public API, against the
 * real processes (accounts, audience, renderer, email, delivery, gateway), nats-server and the SMTP sink:
 * a receipt with line items, a fallback name and a plan condition sent by POST /v1/emails and
 * parsed at the sink; a layout and a snippet; invalid_template with line and column; one item of
 * a batch failing with template_render_failed while the others go; the render endpoint; versions.
 */

const KEY = "mr_test_templates_liquid_1";
const OTHER_KEY = "mr_test_templates_liquid_other_1";
const BC_KEY = "mr_test_templates_liquid_bc_1";
const bootstrap = {
  workspaces: [
    {
      id: "ws_liquid", name: "Liquid", timezone: "Europe/Paris",
      apiKeys: [{ key: KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
    },
    {
      // Broadcasts written in Liquid, to contacts of their own.
      id: "ws_liquid_bc", name: "Liquid broadcasts", timezone: "UTC",
      apiKeys: [{ key: BC_KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }, { slug: "interests", type: "string" }],
      contacts: [
        { email: "ann@liquid-bc.test", firstName: "Ann", subscribed: true, properties: { plan: "pro", interests: "tea,mugs,books" } },
        { email: "bob@liquid-bc.test", subscribed: true, properties: { plan: "free", interests: "maps" } },
      ],
    },
    {
      id: "ws_liquid_other", name: "Other", timezone: "UTC",
      apiKeys: [{ key: OTHER_KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["other.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seq = 0;
const rcpt = (name: string) => `${name}-${++seq}@liquid.test`;

const RECEIPT_HTML = [
  "<p>Hi {{ firstName | default: \"there\" }},</p>",
  "<table>{% for item in order.items %}<tr class=\"line\"><td>{{ item.name }}</td><td>{{ item.qty }}</td><td>{{ item.price | money: \"USD\" }}</td></tr>{% endfor %}</table>",
  "{% if plan == \"pro\" %}<p class=\"pro\">Your Pro support line: <a href=\"https://acme.test/support?order={{ order.id }}\">open a ticket</a></p>{% endif %}",
  "<p>Ordered {{ order.placedAt | date: \"%d %b %Y %H:%M\" }}</p>",
].join("\n");
const RECEIPT_TEXT = "Hi {{ firstName | default: \"there\" }},\n{% for item in order.items %}- {{ item.name }} x{{ item.qty }}: {{ item.price | money: \"USD\" }}\n{% endfor %}Total {{ order.total | money: \"USD\" }}";

describe("Liquid templates, layouts and snippets over the public API", () => {
  let sys: TestSystem;
  const api = (method: string, path: string, body?: unknown, key = KEY) => sys.api(method, path, { key, body });

  async function mailTo(address: string, timeoutMs = 20_000): Promise<Email> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const msg = sys.sink!.messages.find((m) => m.to.includes(address));
      if (msg) return PostalMime.parse(msg.raw);
      if (Date.now() > deadline) throw new Error(`no mail to ${address} within ${timeoutMs} ms\n--- email ---\n${await sys.log("email")}\n--- delivery ---\n${await sys.log("delivery")}`);
      await sleep(50);
    }
  }

  const order = {
    id: "A-1042",
    placedAt: "2026-03-01T23:30:00Z",
    total: 29.5,
    items: [
      { name: "Mug", qty: 2, price: 12 },
      { name: "Tea <green>", qty: 1, price: 5.5 },
    ],
  };

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "email", "delivery", "broadcast", "gateway"] });
    const footer = await api("POST", "/v1/templates", { name: "footer", kind: "snippet", subject: "", html: '<p class="footer">Acme Inc, sent to {{ email }}</p>' });
    expect(footer.status, JSON.stringify(footer.body)).toBe(201);
    const layout = await api("POST", "/v1/templates", {
      name: "base",
      kind: "layout",
      subject: "",
      html: '<html><body><div class="frame">{{ content }}</div>{% render "footer" %}</body></html>',
      text: "{{ content }}\n-- Acme",
    });
    expect(layout.status, JSON.stringify(layout.body)).toBe(201);
    const receipt = await api("POST", "/v1/templates", {
      name: "receipt",
      layout: "base",
      subject: "Receipt {{ order.id }} for {{ firstName | default: \"you\" }}",
      html: RECEIPT_HTML,
      text: RECEIPT_TEXT,
      fromEmail: "billing@acme.test",
    });
    expect(receipt.status, JSON.stringify(receipt.body)).toBe(201);
    expect(receipt.body.template).toMatchObject({ name: "receipt", kind: "template", format: "liquid", layout: "base", version: 1 });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("sends a receipt with its line items, a fallback name and a plan condition, framed by its layout and snippet", async () => {
    const to = rcpt("receipt");
    const res = await api("POST", "/v1/emails", { template: "receipt", to, variables: { order, plan: "pro" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const mail = await mailTo(to);
    expect(mail.subject).toBe("Receipt A-1042 for you");
    const html = mail.html ?? "";
    expect(html).toContain('<div class="frame"><p>Hi there,</p>');
    expect(html.match(/<tr class="line">/g)).toHaveLength(2);
    expect(html).toContain("<td>Mug</td><td>2</td><td>$12.00</td>");
    expect(html).toContain("<td>Tea &lt;green&gt;</td><td>1</td><td>$5.50</td>");
    // The workspace's zone (Europe/Paris): 23:30 UTC is the next day there.
    expect(html).toContain("<p>Ordered 02 Mar 2026 00:30</p>");
    expect(html).toContain(`<p class="footer">Acme Inc, sent to ${to}</p>`);
    // The link holding Liquid output is tracked, and its click token carries the merged URL.
    expect(html).toContain('<p class="pro">Your Pro support line: <a href="');
    const click = /<a href="([^"]+)">open a ticket<\/a>/.exec(html)?.[1] ?? "";
    expect(click).toMatch(/\/t\/c\//);
    const followed = await fetch(`${sys.gatewayUrl}${new URL(click.replaceAll("&amp;", "&")).pathname}`, { redirect: "manual" });
    expect(followed.status).toBe(302);
    expect(followed.headers.get("location")).toBe("https://acme.test/support?order=A-1042");
    // The open pixel is on the rendered HTML.
    expect(html).toMatch(/\/t\/o\//);
    expect(mail.text?.replace(/\r\n/g, "\n")).toContain("Hi there,\n- Mug x2: $12.00\n- Tea <green> x1: $5.50\nTotal $29.50\n-- Acme");

    const free = rcpt("free");
    const sent = await api("POST", "/v1/emails", { template: "receipt", to: free, variables: { order, plan: "free", firstName: "Zoe" } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const other = await mailTo(free);
    expect(other.subject).toBe("Receipt A-1042 for Zoe");
    expect(other.html).toContain("<p>Hi Zoe,</p>");
    expect(other.html).not.toContain("Pro support");
  });

  it("renders a raw email's subject, HTML and text as Liquid with its contactProperties; content without Liquid goes as given; bad Liquid is refused", async () => {
    const to = rcpt("raw-liquid");
    const res = await api("POST", "/v1/emails", {
      from: "shop@acme.test", to,
      subject: "Order {{ order.id }} for {{ firstName | default: \"you\" }}",
      html: RECEIPT_HTML,
      text: RECEIPT_TEXT,
      contactProperties: { order, plan: "pro" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const mail = await mailTo(to);
    expect(mail.subject).toBe("Order A-1042 for you");
    const html = mail.html ?? "";
    expect(html).toContain("<p>Hi there,</p>");
    expect(html).toContain("<td>Mug</td><td>2</td><td>$12.00</td>");
    expect(html).toContain("<td>Tea &lt;green&gt;</td><td>1</td><td>$5.50</td>");
    expect(html).toContain('<p class="pro">Your Pro support line: <a href="');
    const click = /<a href="([^"]+)">open a ticket<\/a>/.exec(html)?.[1] ?? "";
    const followed = await fetch(`${sys.gatewayUrl}${new URL(click.replaceAll("&amp;", "&")).pathname}`, { redirect: "manual" });
    expect(followed.headers.get("location")).toBe("https://acme.test/support?order=A-1042");
    expect(mail.text?.replace(/\r\n/g, "\n")).toContain("Hi there,\n- Mug x2: $12.00\n- Tea <green> x1: $5.50\nTotal $29.50");

    // No Liquid markup: byte for byte as before (a lone "{{" or "{ x }" is text).
    const plain = rcpt("raw-plain");
    const literalHtml = "<p>Prices {from} 5 {{ and 50% off</p>";
    expect((await api("POST", "/v1/emails", { from: "shop@acme.test", to: plain, subject: "Sale {x}", html: literalHtml, text: "Plain {{ text" })).status).toBe(200);
    const plainMail = await mailTo(plain);
    expect(plainMail.subject).toBe("Sale {x}");
    expect(plainMail.html).toContain(literalHtml);
    expect(plainMail.text?.trim()).toBe("Plain {{ text");

    const bad = await api("POST", "/v1/emails", { from: "shop@acme.test", to: rcpt("raw-bad"), subject: "Hi", html: "<p>\n  {% if plan %}never closed</p>" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "invalid_template", field: "html", line: 2, column: 3 });
    const filter = await api("POST", "/v1/emails", { from: "shop@acme.test", to: rcpt("raw-bad"), subject: "{{ x | nope }}", html: "<p>x</p>" });
    expect(filter.body).toMatchObject({ code: "invalid_template", field: "subject", line: 1 });
    // In a batch, only the raw email over its loop limit fails.
    const [okTo, overTo] = [rcpt("raw-batch-ok"), rcpt("raw-batch-over")];
    const batch = await api("POST", "/v1/emails/batch", {
      emails: [
        { from: "shop@acme.test", to: okTo, subject: "Hi {{ n }}", html: "<p>n={{ n }}</p>", contactProperties: { n: 7 } },
        { from: "shop@acme.test", to: overTo, subject: "Hi", html: "{% for i in (1..5000) %}x{% endfor %}" },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body).slice(0, 500)).toBe(200);
    expect(batch.body.emails.successful.map((e: { to: string }) => e.to)).toEqual([okTo]);
    expect(batch.body.emails.failed[0]).toMatchObject({ index: 1, to: overTo, statusCode: 400, code: "template_render_failed" });
    const okMail = await mailTo(okTo);
    expect(okMail.subject).toBe("Hi 7");
    expect(okMail.html).toContain("<p>n=7</p>");
  });

  it("sends a broadcast written in Liquid (if, for, default over contact properties) rendered per recipient; a snippet in it is refused", async () => {
    const bc = (method: string, path: string, body?: unknown) => api(method, path, body, BC_KEY);
    const created = await bc("POST", "/v1/broadcasts", {
      name: "Liquid news", fromName: "Acme",
      subject: "News for {{ firstName | default: \"you\" }}",
      fromEmail: "news@acme.test",
      html: [
        "<html><body><p class=\"hi\">Hi {{ firstName | default: \"friend\" }}</p>",
        "{% if plan == \"pro\" %}<p class=\"pro\">Pro perks</p>{% else %}<p class=\"free\">Upgrade to {{ \"pro\" | upcase }}</p>{% endif %}",
        "<ul>{% assign picks = interests | split: \",\" %}{% for p in picks limit: 2 %}<li>{{ p | upcase }}</li>{% endfor %}</ul>",
        "<a href=\"https://acme.test/for/{{ plan | url_param }}\">more</a></body></html>",
      ].join("\n"),
      audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const scheduled = await bc("POST", `/v1/broadcasts/${created.body.broadcast.id}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);

    const ann = await mailTo("ann@liquid-bc.test", 60_000);
    expect(ann.subject).toBe("News for Ann");
    expect(ann.html).toContain('<p class="hi">Hi Ann</p>');
    expect(ann.html).toContain('<p class="pro">Pro perks</p>');
    expect(ann.html).toContain("<ul><li>TEA</li><li>MUGS</li></ul>");
    expect(ann.html).not.toContain("BOOKS");
    const bob = await mailTo("bob@liquid-bc.test", 60_000);
    expect(bob.subject).toBe("News for you");
    expect(bob.html).toContain('<p class="hi">Hi friend</p>');
    expect(bob.html).toContain('<p class="free">Upgrade to PRO</p>');
    expect(bob.html).toContain("<ul><li>MAPS</li></ul>");
    // The link holding Liquid output is tracked with each recipient's URL.
    const target = async (html: string) => {
      const click = /<a href="([^"]+)">more<\/a>/.exec(html)?.[1] ?? "";
      expect(click).toMatch(/\/t\/c\//);
      return (await fetch(`${sys.gatewayUrl}${new URL(click.replaceAll("&amp;", "&")).pathname}`, { redirect: "manual" })).headers.get("location");
    };
    expect(await target(ann.html ?? "")).toBe("https://acme.test/for/pro");
    expect(await target(bob.html ?? "")).toBe("https://acme.test/for/free");

    const withSnippet = await bc("POST", "/v1/broadcasts", { name: "Snippet", subject: "S", fromEmail: "news@acme.test", fromName: "Acme", html: '<p>x</p>\n{% render "footer" %}', audience: { all: true } });
    const refused = withSnippet.status === 201
      ? await bc("POST", `/v1/broadcasts/${withSnippet.body.broadcast.id}/schedule`, { deliveryMethod: "ASAP" })
      : withSnippet;
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body).toMatchObject({ code: "invalid_template", field: "html", line: 2, column: 1 });
  });

  it("refuses bad Liquid, unknown snippets and layouts with 400 invalid_template, its line and column, and saves nothing", async () => {
    const unclosed = await api("POST", "/v1/templates", { name: "broken", subject: "Hi", html: "<p>Hello</p>\n<ul>\n  {% for item in items %}<li>{{ item }}</li>\n</ul>" });
    expect(unclosed.status, JSON.stringify(unclosed.body)).toBe(400);
    expect(unclosed.body).toMatchObject({ code: "invalid_template", field: "html", line: 3, column: 3 });
    expect(unclosed.body.message).toMatch(/line 3, column 3: .*not closed/);

    const filter = await api("POST", "/v1/templates", { name: "broken", subject: "Hi {{ name | shout }}", html: "<p>x</p>" });
    expect(filter.status).toBe(400);
    expect(filter.body).toMatchObject({ code: "invalid_template", field: "subject", line: 1, column: 4 });
    expect(filter.body.reason).toMatch(/undefined filter: shout/);

    const snippet = await api("POST", "/v1/templates", { name: "broken", subject: "Hi", html: '<p>x</p>\n{% render "nope" %}' });
    expect(snippet.status).toBe(400);
    expect(snippet.body).toMatchObject({ code: "invalid_template", line: 2, column: 1 });
    expect(snippet.body.message).toMatch(/snippet "nope" does not exist/);

    const include = await api("POST", "/v1/templates", { name: "broken", subject: "Hi", html: '{% include "/etc/passwd" %}' });
    expect(include.status).toBe(400);
    expect(include.body.message).toMatch(/not available in templates/);

    const layout = await api("POST", "/v1/templates", { name: "broken", subject: "Hi", html: "<p>x</p>", layout: "receipt" });
    expect(layout.status).toBe(400);
    expect(layout.body.message).toMatch(/is not a layout/);

    const noContent = await api("POST", "/v1/templates", { name: "broken", kind: "layout", subject: "", html: "<html></html>" });
    expect(noContent.status).toBe(400);
    expect(noContent.body.message).toMatch(/\{\{ content \}\}/);

    // Another workspace's snippet is not this one's.
    const foreign = await api("POST", "/v1/templates", { name: "broken", subject: "Hi", html: '{% render "footer" %}' }, OTHER_KEY);
    expect(foreign.status).toBe(400);

    expect((await api("GET", "/v1/templates/broken")).status).toBe(404);
    expect((await api("GET", "/v1/templates/broken", undefined, OTHER_KEY)).status).toBe(404);
  });

  it("refuses to send a layout or a snippet on its own (400 invalid_template), in a batch only that item", async () => {
    const refused: string[] = [];
    for (const name of ["base", "footer"]) {
      const to = rcpt(`piece-${name}`);
      refused.push(to);
      const res = await api("POST", "/v1/emails", { template: name, to, variables: { firstName: "Ann" } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toMatchObject({ code: "invalid_template", template: name, kind: name === "base" ? "layout" : "snippet" });
      expect(res.body.message).toMatch(/is a (layout|snippet).*cannot be sent/);
    }
    const [ok, layout, snippet] = [rcpt("piece-ok"), rcpt("piece-layout"), rcpt("piece-snippet")];
    const batch = await api("POST", "/v1/emails/batch", {
      emails: [
        { template: "receipt", to: ok, variables: { order } },
        { template: "base", to: layout },
        { template: "footer", to: snippet },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body).slice(0, 500)).toBe(200);
    expect(batch.body.emails.successful.map((e: { to: string }) => e.to)).toEqual([ok]);
    expect(batch.body.emails.failed.map((f: { index: number; statusCode: number; code: string }) => [f.index, f.statusCode, f.code])).toEqual([
      [1, 400, "invalid_template"],
      [2, 400, "invalid_template"],
    ]);
    expect((await mailTo(ok)).html).toContain("<p>Hi there,</p>");
    await sleep(500);
    refused.push(layout, snippet);
    expect(sys.sink!.messages.filter((m) => m.to.some((t) => refused.includes(t)))).toEqual([]);
  });

  it("fails one email of a batch with template_render_failed (over 1,000 loop iterations) while the others go", async () => {
    const big = { ...order, items: Array.from({ length: 1_200 }, (_, i) => ({ name: `Item ${i}`, qty: 1, price: 1 })) };
    const [ok1, bad, ok2] = [rcpt("batch-ok"), rcpt("batch-bad"), rcpt("batch-ok")];
    const res = await api("POST", "/v1/emails/batch", {
      emails: [
        { template: "receipt", to: ok1, variables: { order } },
        { template: "receipt", to: bad, variables: { order: big } },
        { template: "receipt", to: ok2, variables: { order, firstName: "Bo" } },
      ],
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(res.body.emails.successful.map((e: { to: string }) => e.to)).toEqual([ok1, ok2]);
    expect(res.body.emails.failed).toHaveLength(1);
    expect(res.body.emails.failed[0]).toMatchObject({ index: 1, to: bad, statusCode: 400, code: "template_render_failed" });
    // Over its 1,000 loop iterations (or its 50 ms, on a machine busy enough to get there first).
    expect(res.body.emails.failed[0].message).toMatch(/1000 loop iterations|50 ms/);
    expect((await mailTo(ok1)).html).toContain("<p>Hi there,</p>");
    expect((await mailTo(ok2)).html).toContain("<p>Hi Bo,</p>");
    await sleep(500);
    expect(sys.sink!.messages.some((m) => m.to.includes(bad))).toBe(false);

    // A single send is refused the same way, with nothing sent.
    const single = await api("POST", "/v1/emails", { template: "receipt", to: rcpt("single-bad"), variables: { order: big } });
    expect(single.status).toBe(400);
    expect(single.body.code).toBe("template_render_failed");
  });

  it("renders a template for a preview, with values or a contact's properties", async () => {
    const res = await api("POST", "/v1/templates/receipt/render", { variables: { order, plan: "pro" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.subject).toBe("Receipt A-1042 for you");
    expect(res.body.html).toContain('<div class="frame"><p>Hi there,</p>');
    // Not tracked: the link is the merged URL itself.
    expect(res.body.html).toContain('<a href="https://acme.test/support?order=A-1042">open a ticket</a>');
    expect(res.body.html).toContain('<p class="footer">Acme Inc, sent to </p>');
    expect(res.body.text).toContain("- Mug x2: $12.00");

    const contact = await api("POST", "/v1/contacts", { properties: { email: "kim@liquid.test", firstName: "Kim", timezone: "America/New_York" } });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const forContact = await api("POST", "/v1/templates/receipt/render", { contactId: contact.body.contact.id, variables: { order } });
    expect(forContact.status, JSON.stringify(forContact.body)).toBe(200);
    expect(forContact.body.subject).toBe("Receipt A-1042 for Kim");
    expect(forContact.body.html).toContain("sent to kim@liquid.test");
    // The contact's zone wins over the workspace's.
    expect(forContact.body.html).toContain("<p>Ordered 01 Mar 2026 18:30</p>");

    expect((await api("POST", "/v1/templates/nope/render", {})).status).toBe(404);
    expect((await api("POST", "/v1/templates/receipt/render", { contactId: "ct_nope" })).status).toBe(404);
    expect((await api("POST", "/v1/templates/receipt/render", {}, OTHER_KEY)).status).toBe(404);
    const tooMuch = await api("POST", "/v1/templates/receipt/render", { variables: { order: { items: Array.from({ length: 1_001 }, () => ({})) } } });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.code).toBe("template_render_failed");
  });

  it("compiles an MJML template to responsive HTML when saved, and refuses bad MJML with its line", async () => {
    const mjml = '<mjml>\n<mj-body>\n<mj-section><mj-column><mj-text>Hi {{ firstName | default: "there" }}</mj-text></mj-column></mj-section>\n</mj-body>\n</mjml>';
    const made = await api("POST", "/v1/templates", { name: "mjml-hello", format: "mjml", subject: "Hello", html: mjml, fromEmail: "hello@acme.test" });
    expect(made.status, JSON.stringify(made.body).slice(0, 300)).toBe(201);
    expect(made.body.template).toMatchObject({ format: "mjml", source: mjml });
    expect(made.body.template.html).toMatch(/@media only screen and \(min-width:480px\)/);
    const to = rcpt("mjml");
    expect((await api("POST", "/v1/emails", { template: "mjml-hello", to, variables: { firstName: "Mia" } })).status).toBe(200);
    expect((await mailTo(to)).html).toContain("Hi Mia");
    const bad = await api("POST", "/v1/templates", { name: "mjml-bad", format: "mjml", subject: "x", html: "<mjml>\n<mj-body>\n<mj-colum>x</mj-colum>\n</mj-body>\n</mjml>" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "invalid_template", field: "html", line: 3 });
    expect(bad.body.message).toMatch(/mj-colum/);
  });

  it("keeps every version and restores one as the newest", async () => {
    const create = await api("POST", "/v1/templates", { name: "versioned", subject: "One", html: "<p>first {{ a | default: 1 }}</p>" });
    expect(create.status, JSON.stringify(create.body)).toBe(201);
    const put = await api("PUT", "/v1/templates/versioned", { subject: "Two", html: "<p>second</p>" });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.template.version).toBe(2);
    // Saving the same content again is no new version.
    expect((await api("PUT", "/v1/templates/versioned", { subject: "Two", html: "<p>second</p>" })).body.template.version).toBe(2);
    const list = await api("GET", "/v1/templates/versioned/versions");
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.versions.map((v: { version: number; subject: string }) => [v.version, v.subject])).toEqual([[2, "Two"], [1, "One"]]);
    const restored = await api("POST", "/v1/templates/versioned/versions/1/restore");
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body.template).toMatchObject({ version: 3, subject: "One", html: "<p>first {{ a | default: 1 }}</p>" });
    expect((await api("GET", "/v1/templates/versioned/versions")).body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    const missing = await api("POST", "/v1/templates/versioned/versions/9/restore");
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("template_version_not_found");
    expect((await api("GET", "/v1/templates/versioned/versions", undefined, OTHER_KEY)).status).toBe(404);
  });
});
