import { describe, expect, it } from "vitest";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ContactStatus, PropertyType, SuppressionReason, type Contact, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { ImportJob } from "../contacts-import.js";
import { contactListView, contactView, importJobView } from "./contacts.js";
import { html } from "./html.js";

const HOSTILE = '<script>alert(1)</script>"';
const csrf = '<input type="hidden" name="_csrf" value="t">';
const contact = {
  id: "ctc_1", email: `ann${HOSTILE}@x.test`, firstName: HOSTILE, lastName: "", timezone: "", status: ContactStatus.SUBSCRIBED,
  properties: { plan: HOSTILE, [`k${HOSTILE}`]: 1 }, createdAt: timestampFromDate(new Date(0)),
} as unknown as Contact;

describe("contacts views", () => {
  it("escapes the list's addresses and names, and the search typed", () => {
    const page = contactListView({ contacts: [contact], search: HOSTILE, status: "BANNED", totalCount: 1n, canEdit: true }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('<a href="/console/contacts/ctc_1">ann&lt;script&gt;alert(1)&lt;/script&gt;&quot;@x.test</a>');
    expect(page).toContain('<td data-label="Name">&lt;script&gt;alert(1)&lt;/script&gt;&quot;</td>');
    expect(page).toContain('type="search" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(page).toContain('<option value="BANNED" selected>Banned</option>');
    expect(page).toContain("1 matching contact</p>");
  });

  it("escapes the contact's properties, events and typed edits, also in attributes", () => {
    const props = [{ slug: "plan", displayName: `Plan${HOSTILE}`, type: PropertyType.SELECT, options: [{ value: HOSTILE }] }] as unknown as ContactProperty[];
    const page = contactView({
      contact, events: [{ name: HOSTILE, properties: { x: HOSTILE } } as never],
      suppression: { reason: SuppressionReason.UNSUBSCRIBED } as never, definitions: props,
      activity: html`<p>activity</p>`, automations: "<p>runs</p>", canEdit: true, csrf, typed: { "prop.plan": HOSTILE, firstName: "" },
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("<h1>ann&lt;script&gt;alert(1)&lt;/script&gt;&quot;@x.test <span");
    expect(page).toContain("<th scope=\"row\"><code>k&lt;script&gt;alert(1)&lt;/script&gt;&quot;</code></th>");
    expect(page).toContain("<strong>&lt;script&gt;alert(1)&lt;/script&gt;&quot;</strong> <code>{&quot;x&quot;:&quot;&lt;script&gt;");
    expect(page).toContain('<label for="e-prop.plan">Plan&lt;script&gt;alert(1)&lt;/script&gt;&quot;</label>');
    expect(page).toContain('id="e-prop.plan" name="prop.plan" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;" style="width:100%" aria-describedby="e-prop.plan-h">');
    expect(page).toContain('data-confirm="Delete the contact ann&lt;script&gt;alert(1)&lt;/script&gt;&quot;@x.test? This cannot be undone.">');
    // Unsubscribed by suppression: the resubscribe form, not the unsubscribe one.
    expect(page).toContain('action="/console/contacts/ctc_1/resubscribe">');
    expect(page).toContain("<p>activity</p>");
    expect(page).toContain("<p>runs</p>");
    expect(page).toContain("The webhook history is not available right now.");
  });

  it("escapes an import's rejected rows and the reason it stopped; a running one polls its JSON", () => {
    const job = {
      id: "imp_1", state: "done", bytes: 10, totalBytes: 10, rows: 2, rejected: 1,
      summary: { rows: 2, created: 1, updated: 0, rejectedCount: 1, rejected: [{ line: 2, email: HOSTILE, reason: HOSTILE }], stopped: { line: 3, reason: HOSTILE } },
    } as unknown as ImportJob;
    const page = importJobView(job).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('<td data-label="Email">&lt;script&gt;alert(1)&lt;/script&gt;&quot;</td>');
    expect(page).toContain("Stopped early at line 3: &lt;script&gt;");
    const running = importJobView({ ...job, state: "running", summary: undefined }).toString();
    expect(running).toContain('fetch("/console/contacts/import/imp_1",');
    expect(running).toContain('<noscript><meta http-equiv="refresh" content="2"></noscript>');
  });
});
