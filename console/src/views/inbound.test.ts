import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { InboundDomainSchema, InboundRuleSchema } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { inboundDomainView, inboundListView } from "./inbound.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("inbound views", () => {
  it("escapes the domains listed", () => {
    const page = inboundListView([create(InboundDomainSchema, { id: "ind_1", domain: HOSTILE, mxHost: HOSTILE, mxPriority: 10 })], csrf).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<a href="/console/inbound/ind_1">${ESCAPED}</a>`);
    expect(page).toContain(`<code>${ESCAPED} MX 10 ${ESCAPED}</code>`);
    expect(page).toContain(`<form method="post" action="/console/inbound" class="card">${csrf}`);
  });

  it("escapes a domain's failure, MX record and rules, in text and attributes", () => {
    const d = create(InboundDomainSchema, { id: "ind_1", domain: HOSTILE, mxHost: HOSTILE, status: "pending", failure: HOSTILE });
    const rule = create(InboundRuleSchema, { id: "inr_1", match: HOSTILE, action: "forward", forwardTo: HOSTILE });
    const page = inboundDomainView(d, [rule], { verify: csrf, remove: csrf, addRule: csrf, deleteRule: csrf }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<h1>${ESCAPED}</h1>`);
    expect(page).toContain(`Last check: ${ESCAPED}`);
    expect(page).toContain(`data-copy="${ESCAPED}" hidden aria-label="Copy host of the MX record"`);
    expect(page).toContain(`<td data-label="Action">Forward to <code>${ESCAPED}</code></td>`);
    expect(page).toContain(`data-confirm="Delete the rule ${ESCAPED}? Mail only`);
    expect(page).toContain(`aria-label="Delete the rule ${ESCAPED}">Delete</button>`);
    expect(page).toContain(`data-confirm="Stop receiving mail for ${ESCAPED}?`);
  });

  it("shows only the forms the session may post", () => {
    const d = create(InboundDomainSchema, { id: "ind_1", domain: "in.acme.example" });
    const page = inboundDomainView(d, [create(InboundRuleSchema, { id: "inr_1", match: "*", action: "store" })], {}).toString();
    expect(page).not.toContain("<form");
    expect(page).toContain("<code>Any address (*)</code>");
    expect(page).toContain("Store: kept for the API only");
  });
});
