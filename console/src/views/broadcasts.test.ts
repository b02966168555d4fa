import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { BroadcastSchema, BroadcastStatus } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { EMPTY_DRAFT } from "../pages/broadcasts-form.js";
import { broadcastListView, draftPageView, newDraftView, progressPageView } from "./broadcasts.js";
import { html } from "./html.js";

const HOSTILE = '"><script>alert(1)</script>';
const picker = { groups: [], segments: [], topics: [] };

describe("broadcasts views", () => {
  it("escapes names and subjects in the list", () => {
    const page = broadcastListView([create(BroadcastSchema, { id: "cmp_1", name: HOSTILE, subject: "<b>Hi</b> & bye" })], true, "c&d").toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain('<a href="/console/broadcasts/cmp_1">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a>');
    expect(page).toContain("<td data-label=\"Subject\">&lt;b&gt;Hi&lt;/b&gt; &amp; bye</td>");
    expect(page).toContain('href="/console/broadcasts?cursor=c%26d"');
    expect(page).toContain('href="/console/broadcasts/new"');
    expect(broadcastListView([], false).toString()).toContain("No broadcasts yet.");
  });

  it("puts what was typed back into the form escaped, in values and textareas", () => {
    const page = newDraftView({ ...EMPTY_DRAFT, name: HOSTILE, html: "</textarea><script>alert(1)</script>", audience: { ...EMPTY_DRAFT.audience, mode: "filter", filterJson: '{"a":"</textarea>"}' } }, '<input type="hidden" name="_csrf" value="t">', picker).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain('name="name" value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(page).toContain('rows="14">&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;</textarea>');
    expect(page).toContain("{&quot;a&quot;:&quot;&lt;/textarea&gt;&quot;}</textarea>");
    expect(page).toContain('<form method="post" action="/console/broadcasts" class="card"><input type="hidden" name="_csrf" value="t">');
    expect(page).toContain('id="f-trackOpens" name="trackOpens" checked');
    expect(page).toContain('id="aud-mode-filter" name="audience" value="filter" checked');
  });

  it("escapes the preview (srcdoc, subject, contact) and the member list of a draft", () => {
    const b = create(BroadcastSchema, { id: "cmp_2", name: HOSTILE, status: BroadcastStatus.DRAFT });
    const page = draftPageView({
      broadcast: b, values: EMPTY_DRAFT, contact: 'x"@y.test', contacts: [], members: [`m${HOSTILE}@x.test`], audienceCount: 3,
      previews: [{ ok: true, p: { subject: "<i>S</i>", previewText: "", html: `<p class="a">'hi' & "bye"</p>`, text: "<t>", contactFound: false } }],
      checkPanel: html`<section id="check"></section>`, edit: { csrf: "", picker },
    }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain('srcdoc="&lt;p class=&quot;a&quot;&gt;&#39;hi&#39; &amp; &quot;bye&quot;&lt;/p&gt;"');
    expect(page).toContain("<dd data-preview-subject style=\"margin:0;font-weight:600\">&lt;i&gt;S&lt;/i&gt;</dd>");
    expect(page).toContain("No contact with the address x&quot;@y.test");
    expect(page).toContain('name="member" value="m&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@x.test"');
    expect(page).toContain("The saved audience holds <strong>3</strong> contacts now");
    expect(page).toContain('id="dm-PROGRESSIVE" name="deliveryMethod" value="PROGRESSIVE" checked');
    expect(page).toContain('<section id="check"></section>');
  });

  it("escapes the progress view's name, subject and pause reason", () => {
    const b = create(BroadcastSchema, { id: "cmp_3", name: HOSTILE, subject: HOSTILE, status: BroadcastStatus.SCHEDULED, pauseReason: "<b>x</b>" });
    const page = progressPageView({ broadcast: b, chart: html`<svg></svg>`, ab: html``, csrf: "" }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain("<h1>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt; <span");
    expect(page).toContain("Releasing stopped early: &lt;b&gt;x&lt;/b&gt;.");
    expect(page).toContain('<form id="cancel" method="post" action="/console/broadcasts/cmp_3/cancel"');
    expect(page).toContain('var url="/console/broadcasts/cmp_3/progress.json";');
    expect(progressPageView({ broadcast: b, chart: html``, ab: html`` }).toString()).not.toContain('id="cancel"');
  });
});
