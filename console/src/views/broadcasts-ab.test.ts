import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { BroadcastSchema } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { NO_AB } from "../pages/broadcasts-ab.js";
import { abFormView, abProgressView } from "./broadcasts-ab.js";

/**
 * The progress page's A/B section at phone width: the chart's text is drawn at its own pixel
 * size (no viewBox to shrink it: a 600-unit one drew labels at ~6 px in 335 px), and the
 * variants' table stacks its cells (labelled) so "Send variant X now" is not off-screen in a
 * table that scrolls sideways. The browser suites check the rendering itself.
 */
describe("console: the A/B section", () => {
  const broadcast = create(BroadcastSchema, {
    id: "brd_1", name: "News", subject: "Base",
    abTest: {
      variants: [{ subject: "Alpha" }, { subject: "Beta" }, { fromName: "Gamma" }, { html: "<p>D</p>" }],
      testShare: 0.2, metric: "opens", waitForSeconds: 3600n, state: "waiting",
      stats: [
        { recipients: 10n, delivered: 10n, uniqueOpens: 4n, uniqueClicks: 1n },
        { recipients: 10n, delivered: 8n, uniqueOpens: 8n, uniqueClicks: 2n },
        { recipients: 10n, delivered: 10n, uniqueOpens: 0n, uniqueClicks: 0n },
        { recipients: 10n, delivered: 10n, uniqueOpens: 5n, uniqueClicks: 5n },
      ],
    },
  });
  const html = abProgressView(broadcast, { chooseAction: "/console/broadcasts/brd_1/ab/winner", csrf: "", formatTime: () => "soon" }).toString();

  it("draws the chart without a viewBox, its text at 11 px or more", () => {
    const svg = /<svg[^>]*data-ab-chart[\s\S]*?<\/svg>/.exec(html)![0];
    expect(svg).not.toMatch(/viewBox/i);
    const sizes = [...svg.matchAll(/font-size="(\d+(?:\.\d+)?)"/g)].map((m) => Number(m[1]));
    expect(sizes).toHaveLength(4 * 3);
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(11);
    // Four variants, two bars each, inside the drawn width.
    const xs = [...svg.matchAll(/<rect x="([\d.]+)%"[^>]*width="([\d.]+)%"/g)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(xs).toHaveLength(8);
    for (const [x, w] of xs) expect(x >= 0 && x + w <= 100).toBe(true);
    expect(svg).toContain(">100%</text>"); // B: 8 opens of 8 delivered, short enough for a narrow bar
  });

  it("stacks the variants' table, every cell labelled, the choose buttons in it", () => {
    expect(html).toContain('<table class="data stack ab-variants">');
    const rows = [...html.matchAll(/<tr(?: class="winner")?><th scope="row">[\s\S]*?<\/tr>/g)].map((m) => m[0]);
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      const cells = [...row.matchAll(/<td( [^>]*)?>/g)].map((m) => m[1] ?? "");
      expect(cells.filter((c) => !/data-label="|class="ab-choose"/.test(c))).toEqual([]);
      expect(row).toMatch(/data-ab-choose="\d"/);
    }
  });

  it("escapes what was typed into a variant, in text and in attributes", () => {
    const hostile = create(BroadcastSchema, {
      id: "brd_2", name: "<script>alert(1)</script>", subject: "Base",
      abTest: { variants: [{ subject: '"><script>alert(1)</script>' }, { fromName: "B" }], testShare: 0.2, metric: "opens", waitForSeconds: 3600n, state: "decided", winner: 0, stats: [] },
    });
    const page = abProgressView(hostile, { formatTime: () => "soon" }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("subject “&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;”");
    expect(page).toContain("A/B test of &lt;script&gt;alert(1)&lt;/script&gt;: variant A");
    const variants = NO_AB.variants.map((v, i) => (i === 0 ? { ...v, subject: '"><script>alert(1)</script>', html: "</textarea><script>alert(1)</script>" } : v));
    const form = abFormView({ ...NO_AB, enabled: true, variants, waitFor: '4" autofocus onfocus="x()' }).toString();
    expect(form).not.toContain("<script>");
    expect(form).toContain('name="abSubject0" value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(form).toContain('name="abHtml0" rows="4">&lt;/textarea&gt;&lt;script&gt;');
    expect(form).toContain('value="4&quot; autofocus onfocus=&quot;x()"');
    expect(form).toContain('<option value="hours" selected>hours</option>');
    expect(form).toContain('id="f-ab" name="ab" checked');
  });
});
