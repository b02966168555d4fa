import { describe, expect, it, vi } from "vitest";
import { checkTemplate, LiquidSyntaxError, parseField, parseSnippet, RenderFailure, renderParsed, usesLiquid, type Mode, type ParsedSnippet } from "./engine.js";
import { forHtmlMerge, ParsedTemplate, ParsedTemplateCache } from "./template.js";

const html = (source: string, values: Record<string, unknown> = {}, snippets?: Map<string, ParsedSnippet>) =>
  renderParsed(parseField("html", source, "html"), "html", values, { snippets });
const text = (source: string, values: Record<string, unknown> = {}, opts: { timeZone?: string } = {}) =>
  renderParsed(parseField("text", source, "raw"), "raw", values, opts);
const failure = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a failure");
};

describe("the Liquid engine", () => {
  it("writes outputs with default, upcase, money and date (in the recipient's zone)", () => {
    expect(text('Hi {{ firstName | default: "there" }}', {})).toBe("Hi there");
    expect(text('Hi {{ firstName | default: "there" }}', { firstName: "Ann" })).toBe("Hi Ann");
    expect(text('Hi {{ firstName | default: "there" }}', { firstName: "" })).toBe("Hi there");
    expect(text("{{ plan | upcase }}", { plan: "pro" })).toBe("PRO");
    expect(text("{{ total | money }}", { total: 1234.5 })).toBe("1,234.50");
    expect(text('{{ total | money: "EUR" }}', { total: 12 })).toBe("€12.00");
    expect(text('{{ total | money: "EUR", "de-DE" }}', { total: 12 })).toBe("12,00\u00a0€");
    expect(text('{{ total | money: "USD" }}', { total: "19.9" })).toBe("$19.90");
    expect(text("{{ total | money }}", { total: "n/a" })).toBe("n/a");
    const at = "2026-03-01T23:30:00Z";
    expect(text('{{ at | date: "%Y-%m-%d %H:%M" }}', { at }, { timeZone: "UTC" })).toBe("2026-03-01 23:30");
    expect(text('{{ at | date: "%Y-%m-%d %H:%M" }}', { at }, { timeZone: "Europe/Paris" })).toBe("2026-03-02 00:30");
    expect(text('{{ at | date: "%Y-%m-%d %H:%M", "America/New_York" }}', { at }, { timeZone: "Europe/Paris" })).toBe("2026-03-01 18:30");
  });

  it("branches with if / elsif / else, unless and case", () => {
    const t = '{% if plan == "pro" %}Pro{% elsif plan == "team" %}Team{% else %}Free{% endif %}';
    expect(text(t, { plan: "pro" })).toBe("Pro");
    expect(text(t, { plan: "team" })).toBe("Team");
    expect(text(t, {})).toBe("Free");
    expect(text("{% unless vip %}Upgrade{% endunless %}", { vip: false })).toBe("Upgrade");
    expect(text("{% unless vip %}Upgrade{% endunless %}", { vip: true })).toBe("");
    const c = '{% case plan %}{% when "pro", "team" %}paid{% when "free" %}free{% else %}?{% endcase %}';
    expect([text(c, { plan: "team" }), text(c, { plan: "free" }), text(c, { plan: "x" })]).toEqual(["paid", "free", "?"]);
  });

  it("loops with limit, offset, forloop and else; assigns and captures", () => {
    const items = [{ name: "A", qty: 1 }, { name: "B", qty: 2 }, { name: "C", qty: 3 }];
    expect(text("{% for i in items %}{{ i.name }}x{{ i.qty }}{% unless forloop.last %},{% endunless %}{% endfor %}", { items })).toBe("Ax1,Bx2,Cx3");
    expect(text("{% for i in items limit: 2 %}{{ i.name }}{% endfor %}", { items })).toBe("AB");
    expect(text("{% for i in items offset: 1 %}{{ i.name }}{% endfor %}", { items })).toBe("BC");
    expect(text("{% for i in items offset: 1 limit: 1 %}{{ i.name }}{% endfor %}", { items })).toBe("B");
    expect(text("{% for i in items %}{{ i }}{% else %}none{% endfor %}", { items: [] })).toBe("none");
    expect(text("{% for i in items %}{% if i.qty == 2 %}{% break %}{% endif %}{{ i.name }}{% endfor %}", { items })).toBe("A");
    expect(text('{% assign n = items | size %}{{ n }} item{% if n != 1 %}s{% endif %}', { items })).toBe("3 items");
    expect(text('{% capture greeting %}Hi {{ name | default: "you" }}!{% endcapture %}{{ greeting | upcase }}', {})).toBe("HI YOU!");
    expect(text("{% tablerow i in items cols: 2 %}{{ i.name }}{% endtablerow %}", { items })).toContain("<td class=\"col1\">A</td>");
  });

  it("renders a missing value, a missing property and a property of nothing as empty", () => {
    expect(text("[{{ nope }}][{{ a.b.c }}][{{ order.items[3].name }}]", { order: { items: [] } })).toBe("[][][]");
    expect(html("<p>{{ firstName }}</p>")).toBe("<p></p>");
  });

  it("writes values as the {{name}} merge did: HTML-escaped in HTML, raw in text, lists joined, objects as JSON", () => {
    const values = { name: `<b>"Tom" & 'Jerry'</b>`, tags: ["a", "b"], meta: { k: 1 }, n: 3, yes: true, none: null };
    expect(html("{{ name }}|{{ tags }}|{{ meta }}|{{ n }}|{{ yes }}|{{ none }}", values)).toBe(
      "&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;|a, b|{&quot;k&quot;:1}|3|true|",
    );
    expect(text("{{ name }}|{{ tags }}|{{ meta }}", values)).toBe(`<b>"Tom" & 'Jerry'</b>|a, b|{"k":1}`);
    // The author's own escape is not escaped again; `raw` opts out.
    expect(html("{{ name | escape }}", { name: "a&b" })).toBe("a&amp;b");
    expect(html("{{ name | raw }}", { name: "<i>x</i>" })).toBe("<i>x</i>");
  });

  it("renders snippets in their own scope, with arguments, and fails on a missing one", () => {
    const snippets = new Map([["footer", parseSnippet("footer", '<p>{{ label | default: "Bye" }} {{ firstName }}</p>')]]);
    expect(html('{% assign label = "ignored" %}{% render "footer" %}', { firstName: "Ann" }, snippets)).toBe("<p>Bye Ann</p>");
    expect(html('{% render "footer", label: "See you" %}', { firstName: "Ann" }, snippets)).toBe("<p>See you Ann</p>");
    const missing = failure(() => html('{% render "nope" %}', {}, snippets));
    expect(missing).toBeInstanceOf(RenderFailure);
    expect((missing as Error).message).toMatch(/snippet "nope" does not exist/);
    // A snippet rendering itself stops at the depth limit.
    const loop = new Map([["loop", parseSnippet("loop", 'x{% render "loop" %}')]]);
    expect((failure(() => html('{% render "loop" %}', {}, loop)) as Error).message).toMatch(/nested more than 10/);
  });

  it("refuses bad Liquid when parsed, with the field, line and column", () => {
    const err = failure(() => checkTemplate({ subject: "ok", html: "<p>\n  {% if x %}\n<p>{{ x | nosuchfilter }}</p>" }, (f) => (f === "html" ? "html" : "raw")));
    expect(err).toBeInstanceOf(LiquidSyntaxError);
    const e = err as LiquidSyntaxError;
    expect(e.field).toBe("html");
    expect([e.line, e.column]).toEqual([3, 4]);
    expect(e.reason).toMatch(/undefined filter: nosuchfilter/);
    const unclosed = failure(() => parseField("html", "<p>\n\n  {% for i in items %}{{ i }}", "html")) as LiquidSyntaxError;
    expect([unclosed.line, unclosed.column, unclosed.reason]).toEqual([3, 3, expect.stringMatching(/not closed/)]);
    const output = failure(() => parseField("subject", "Hi {{ name ", "raw")) as LiquidSyntaxError;
    expect(output.line).toBe(1);
    expect(output.reason).toMatch(/not closed/);
    expect(checkTemplate({ html: '{% render "footer" %}{% render "social", a: 1 %}' }, () => "html")).toEqual(new Set(["footer", "social"]));
  });

  it("is sandboxed: no file system, no include or layout, no prototype, no function called", () => {
    for (const tag of ['{% include "/etc/passwd" %}', '{% layout "x" %}', "{% block a %}{% endblock %}"]) {
      expect((failure(() => parseField("html", tag, "html")) as LiquidSyntaxError).reason).toMatch(/not available in templates/);
    }
    // render takes a snippet name only: a path is a name that no workspace has, never a file.
    expect((failure(() => html('{% render "../../../../etc/passwd" %}')) as Error).message).toMatch(/does not exist/);
    expect((failure(() => parseField("html", "{% render name %}", "html")) as LiquidSyntaxError).reason).toMatch(/in quotes/);
    const values = JSON.parse('{"o": {"a": 1}, "s": "abc", "list": [1], "__proto__": {"polluted": "yes"}}');
    expect(text("[{{ o.constructor }}][{{ o.__proto__ }}][{{ s.constructor.name }}][{{ o.toString }}][{{ list.constructor }}][{{ o.hasOwnProperty }}]", values)).toBe("[][][][][][]");
    expect(text("{{ constructor }}{{ toString }}{{ polluted }}", values)).not.toMatch(/function|Object|yes/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("fails a render over 1,000 loop iterations or 50 ms, counting nested loops and snippets", () => {
    const items = Array.from({ length: 600 }, (_, i) => i);
    expect(text("{% for i in items %}.{% endfor %}", { items })).toHaveLength(600);
    const over = failure(() => text("{% for i in items %}.{% endfor %}{% for i in items %}.{% endfor %}", { items }));
    expect(over).toBeInstanceOf(RenderFailure);
    expect((over as Error).message).toMatch(/more than 1000 loop iterations/);
    const nested = failure(() => text("{% for a in items %}{% for b in items %}x{% endfor %}{% endfor %}", { items: Array.from({ length: 40 }, (_, i) => i) }));
    expect((nested as Error).message).toMatch(/loop iterations/);
    const ranged = failure(() => text("{% for i in (1..100000000) %}{% endfor %}"));
    expect(ranged).toBeInstanceOf(RenderFailure);
    // Within the iteration limit but slow (each step builds a long string): the time limit.
    const started = performance.now();
    const slow = failure(() =>
      text('{% assign s = "x" %}{% for i in (1..900) %}{% assign s = s | append: s | slice: 0, 200000 %}{{ s | size }}{% endfor %}'),
    );
    expect(slow).toBeInstanceOf(RenderFailure);
    expect((slow as Error).message).toMatch(/50 ms|too much text/);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("counts the 50 ms in CPU time: a render the machine deschedules (the clock running on) still succeeds", () => {
    const now = performance.now.bind(performance);
    let skew = 0;
    // Every reading of the clock finds 5 ms more gone, as on a machine busy with other work.
    const clock = vi.spyOn(performance, "now").mockImplementation(() => now() + (skew += 5));
    try {
      const items = Array.from({ length: 300 }, (_, i) => i);
      expect(text("{% for i in items %}{{ i }},{% endfor %}", { items })).toHaveLength(items.join(",").length + 1);
      expect(skew).toBeGreaterThan(50);
    } finally {
      clock.mockRestore();
    }
  });

  it("tells content that needs Liquid from content the byte merge serves", () => {
    expect(usesLiquid("Hi {{firstName}}", "<p>{{ plan }}</p>", "", "no braces at all")).toBe(false);
    expect(usesLiquid("Hi {{ firstName | default: 'x' }}")).toBe(true);
    expect(usesLiquid("{{ order.id }}")).toBe(true);
    expect(usesLiquid("{% if x %}{% endif %}")).toBe(true);
    expect(usesLiquid("a { b } {{")).toBe(false);
  });
});

describe("templates rendered per recipient", () => {
  const receipt = {
    key: "ws|tpl_1@1",
    fields: {
      subject: "Receipt {{ order.id }} for {{ firstName | default: \"there\" }}",
      html:
        '<p>Hi {{ firstName | default: "there" }},</p><table>{% for item in order.items %}<tr><td>{{ item.name }}</td><td>{{ item.price | money: "USD" }}</td></tr>{% endfor %}</table>' +
        '{% if plan == "pro" %}<p>Pro support: <a href="https://acme.test/support?o={{ order.id | url_encode }}">help</a></p>{% endif %}',
      text: "",
      previewText: "{{ order.items | size }} items",
    },
  };

  it("renders a receipt with a loop, a fallback name and a plan condition; system values stay slots", () => {
    const parsed = ParsedTemplate.parse(receipt);
    const order = { id: "A-1 &2", items: [{ name: "Mug", price: 12 }, { name: "Tea <green>", price: 4.5 }] };
    const out = parsed.render({ order, plan: "pro" }, { email: "ann@example.test" });
    expect(out.subject).toBe("Receipt A-1 &2 for there");
    expect(out.previewText).toBe("2 items");
    expect(out.html).toBe(
      "<p>Hi there,</p><table><tr><td>Mug</td><td>$12.00</td></tr><tr><td>Tea &lt;green&gt;</td><td>$4.50</td></tr></table>" +
        '<p>Pro support: <a href="https://acme.test/support?o=A-1+%262">help</a></p>',
    );
    expect(parsed.render({ order, plan: "free", firstName: "Ann" }, { email: "x@y.test" }).html).not.toContain("Pro support");
    const slots = ParsedTemplate.parse({ key: "k", fields: { subject: "s", html: '<a href="{{ unsubscribeUrl }}">u</a> {{ email }}', text: "{{ manageUrl }}", previewText: "" } });
    expect(slots.render({ email: "spoof@x.test", unsubscribeUrl: "https://evil.test" }, { email: "ann@example.test" })).toMatchObject({
      html: '<a href="{{unsubscribeUrl}}">u</a> ann@example.test',
      text: "{{manageUrl}}",
    });
  });

  it("frames a template in its layout's {{ content }} and renders snippets from both", () => {
    const parsed = ParsedTemplate.parse({
      key: "k2",
      fields: { subject: "Hello", html: "<p>Hi {{ firstName }} & co</p>", text: "Hi {{ firstName }}", previewText: "" },
      layout: { html: '<html><body><h1>{{ brand | default: "Acme" }}</h1>{{ content }}{% render "footer" %}</body></html>', text: "{{ content }}\n-- Acme" },
      snippets: [{ name: "footer", html: "<footer>Sent to {{ email }}</footer>" }],
    });
    const out = parsed.render({ firstName: "<Ann>" }, { email: "ann@example.test" });
    expect(out.html).toBe("<html><body><h1>Acme</h1><p>Hi &lt;Ann&gt; & co</p><footer>Sent to ann@example.test</footer></body></html>");
    expect(out.text).toBe("Hi <Ann>\n-- Acme");
  });

  it("parses once per content key", () => {
    const cache = new ParsedTemplateCache();
    const a = cache.get(receipt);
    expect(cache.get({ ...receipt, fields: { ...receipt.fields, html: "changed" } })).toBe(a);
    expect(cache.get({ ...receipt, key: "ws|tpl_1@2" })).not.toBe(a);
  });

  it("prepares HTML as the merge treats it: query values percent-encoded, unquoted attributes quoted", () => {
    expect(forHtmlMerge('<a href="https://x.test/p/{{ slug }}?e={{ email }}#{{frag}}">x</a>')).toBe(
      '<a href="https://x.test/p/{{slug}}?e={{ email | url_param }}#{{ frag | url_param }}">x</a>',
    );
    expect(forHtmlMerge("<img alt={{name}}>")).toBe('<img alt="{{name}}">');
    expect(forHtmlMerge("<p>{{ a.b }}</p>")).toBe("<p>{{ a.b }}</p>");
    const mode: Mode = "html";
    expect(renderParsed(parseField("html", forHtmlMerge("<img alt={{name}}>"), mode), mode, { name: "a onerror=x" })).toBe('<img alt="a onerror=x">');
  });
});
