import { describe, expect, it } from "vitest";
import { SuppressionReason, type Suppression } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { suppressionListView, suppressionMappingView, suppressionReportView } from "./suppressions.js";

const HOSTILE = '<script>alert(1)</script>"';
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("suppressions views", () => {
  it("escapes addresses, notes and sources, also in the remove form's attributes", () => {
    const page = suppressionListView({
      suppressions: [{ email: `x${HOSTILE}@a.test`, domain: "", reason: SuppressionReason.COMPLAINT, detail: HOSTILE, source: HOSTILE } as Suppression],
      search: HOSTILE, canEdit: true, csrf,
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('<td data-label="Address or domain">x&lt;script&gt;alert(1)&lt;/script&gt;&quot;@a.test</td>');
    expect(page).toContain('name="target" value="x&lt;script&gt;alert(1)&lt;/script&gt;&quot;@a.test"');
    expect(page).toContain('id="force-x&lt;script&gt;alert(1)&lt;/script&gt;&quot;@a.test" name="force"');
    expect(page).toContain('<td data-label="Detail">&lt;script&gt;alert(1)&lt;/script&gt;&quot;</td>');
    expect(page).toContain('type="search" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(page).toContain(`aria-labelledby="add-h">${csrf}`);
  });

  it("says a filtered list is empty differently from an empty one, and hides forms from a viewer", () => {
    expect(suppressionListView({ suppressions: [], search: "", reason: "complaint", canEdit: false, csrf }).toString())
      .toContain('<p class="muted">Nothing suppressed matches.</p>');
    const empty = suppressionListView({ suppressions: [], search: "", canEdit: false, csrf }).toString();
    expect(empty).toContain("Nobody is suppressed.");
    expect(empty).not.toContain("<form method=\"post\"");
  });

  it("escapes the CSV's headers and cells in the mapping, and rejected rows in the report", () => {
    const page = suppressionMappingView({
      uploadId: "upl_1", preview: { header: [HOSTILE, ""], rows: [[HOSTILE, "b"]] }, csrf,
      targets: [{ value: "email", label: "Email address" }], guess: (h) => (h ? "email" : ""),
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('<th scope="col"><span>&lt;script&gt;alert(1)&lt;/script&gt;&quot;</span>');
    expect(page).toContain('<option value="email" selected>Email address</option>');
    expect(page).toContain("<span>Column 2</span>");
    expect(page).toContain("<td>&lt;script&gt;alert(1)&lt;/script&gt;&quot;</td><td>b</td>");
    const report = suppressionReportView({ rows: 2, created: 1, existing: 0, rejectedCount: 3, rejected: [{ line: 3, value: HOSTILE, reason: HOSTILE }] }).toString();
    expect(report).not.toContain("<script>");
    expect(report).toContain('<td data-label="Value">&lt;script&gt;alert(1)&lt;/script&gt;&quot;</td>');
    expect(report).toContain("… and 2 more.");
  });
});
