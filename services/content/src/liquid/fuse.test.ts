import { describe, expect, it } from "vitest";
import { Liquid } from "liquidjs";
import { fuse } from "./fuse.js";
import { parseField, renderParsed } from "./engine.js";

/** Fusing must never change a render: each source renders the same fused and as liquidjs parsed it. */
const SOURCES = [
  "plain text, no tags",
  "Hi {{ firstName }} {{ lastName }}, from {{ company | upcase }}!",
  '{{ missing | default: "there" }} {{ firstName | default: "there" }} {{ empty | default: "x", allow_false: true }}',
  '{{ order.items[0].name }} {{ order.items.size }} {{ order.items.first.qty }} {{ order["ref"] }} {{ order.items[1]["name"] }}',
  '{{ firstName | append: lastName }} {{ firstName | append: "-" | append: company }} {{ 3 | plus: 4 }} {{ "lit" | upcase }}',
  "<b>{{ company }}</b>{% if plan == 'pro' %}<i>{{ plan }}</i>{% elsif plan == 'free' %}free{% else %}{{ plan | size }}{% endif %}",
  "{% for item in order.items %}<tr><td>{{ forloop.index }}</td><td>{{ item.name | escape }}</td><td>{{ item.price | times: item.qty }}</td></tr>{% else %}none{% endfor %}",
  "{% for item in order.items limit: 1 offset: 1 %}{{ item.name }}{% endfor %}{% unless plan %}no plan{% endunless %}",
  "{% capture hello %}Hi {{ firstName }}{% endcapture %}{{ hello | size }}:{{ hello }}",
  "{% case plan %}{% when 'pro' %}P {{ firstName }}{% when 'free' %}F{% else %}?{% endcase %}",
  "{% assign n = order.items | size %}{{ n }} item{% if n != 1 %}s{% endif %} {{ order.items | map: 'name' | join: ', ' }}",
  "{% tablerow i in order.items cols: 2 %}{{ i.name }}{% endtablerow %}",
  "{{ values }} {{ values | join: '+' }} {{ nested }} {{ nothing.at.all }} {{ flag }} {{ zero }}",
  "{%- if true -%}  trimmed {{ firstName -}}  {%- endif -%}",
];
const VALUES = [
  {
    firstName: "Ann <&>", lastName: "O'Neil", company: "Acme \"Ltd\"", plan: "pro", flag: false, zero: 0, values: [1, "two"], nested: { a: 1 },
    order: { ref: "R-1", items: [{ name: "Pen & ink", qty: 2, price: 1.5 }, { name: "Book", qty: 1, price: 12 }] },
  },
  { plan: "free", order: { items: [] } },
  { plan: "team", firstName: "", empty: false },
];

describe("fuse", () => {
  for (const mode of ["html", "raw"] as const) {
    it(`renders what liquidjs renders, ${mode}`, () => {
      const liquid = new Liquid({ outputEscape: mode === "html" ? "escape" : undefined, ownPropertyOnly: true });
      for (const source of SOURCES) {
        for (const values of VALUES) {
          const plain = liquid.parse(source);
          const fused = fuse(liquid.parse(source));
          expect(liquid.renderSync(fused, values), `${source} with ${JSON.stringify(values)}`).toBe(liquid.renderSync(plain, values));
        }
      }
    });
  }

  it("leaves fewer nodes to render: a run of literals and outputs is one", () => {
    const liquid = new Liquid();
    const parsed = liquid.parse("<p>Hi {{ a }}, {{ b | upcase }}</p>{% if c %}x{{ c }}y{% endif %}<p>{{ d }}</p>");
    expect(parsed).toHaveLength(9);
    expect(fuse(parsed)).toHaveLength(3);
  });

  it("is what the engine renders with: its escaping, its value formatting, a missing value empty", () => {
    const out = renderParsed(parseField("html", "<p>{{ who }} {{ list }} {{ gone }}|{{ obj.k | default: 'd' }}</p>", "html"), "html", { who: "<A&B>", list: ["x", "y"], obj: {} });
    expect(out).toBe("<p>&lt;A&amp;B&gt; x, y |d</p>");
  });
});
