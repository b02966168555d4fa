import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { CheckDirectSendingResponseSchema, DomainSchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { GetDmarcSummaryResponseSchema } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { domainListView, domainPageView } from "./domains.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("domains views", () => {
  it("escapes domains and sender addresses on the list, and shows the add form only with a csrf field", () => {
    const page = domainListView({ domains: [create(DomainSchema, { domain: HOSTILE })], emails: [{ email: HOSTILE, verified: true } as never] }, csrf).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<a href="/console/domains/${encodeURIComponent(HOSTILE)}">${ESCAPED}</a>`);
    expect(page).toContain(`<li>${ESCAPED} <span class="badge ok">Verified</span></li>`);
    expect(page).toContain(`<form method="post" action="/console/domains" class="card">${csrf}`);
    expect(domainListView({ domains: [], emails: [] }, undefined).toString()).not.toContain("<form");
  });

  it("escapes a domain's records, its last error, the DMARC reporters and the direct-sending check", () => {
    const domain = create(DomainSchema, {
      domain: "acme.example", verified: false, verificationError: HOSTILE,
      records: [{ type: "TXT", purpose: "dkim", name: HOSTILE, value: HOSTILE, verified: false }],
    });
    const summary = create(GetDmarcSummaryResponseSchema, { reports: 1, reporters: [HOSTILE], rua: `mailto:${HOSTILE}`, days: [], sources: [{ sourceIp: HOSTILE, messages: 1n, failingAlignment: true }] });
    const check = create(CheckDirectSendingResponseSchema, { confirmedName: "", reverseError: HOSTILE, spf: [{ domain: HOSTILE, result: "fail", detail: HOSTILE, role: "from" }] });
    const page = domainPageView({
      domain, recheckCsrf: csrf,
      dmarc: { kind: "summary", summary },
      direct: { kind: "checked", address: "192.0.2.1", ehloName: HOSTILE, check },
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<p class="flash error" role="status">Last check: ${ESCAPED}</p>`);
    expect(page).toContain(`<code class="value one-line" id="rec-name-0" tabindex="0">${ESCAPED}</code>`);
    expect(page).toContain(`data-copy="${ESCAPED}"`);
    expect(page).toContain(`1 report from ${ESCAPED} in the last`);
    expect(page).toContain(`<code>${ESCAPED}</code></td><td data-label="Messages">1</td>`);
    expect(page).toContain(`<span class="muted">${ESCAPED}. Ask whoever runs the address`);
    expect(page).toContain(`<code class="value">${ESCAPED}</code>`);
    expect(page).toContain(`action="/console/domains/acme.example/verify">${csrf}<button type="submit">Re-check DNS now</button>`);
  });

  it("says why a card has nothing, and shows no direct-sending card without a direct route", () => {
    const domain = create(DomainSchema, { domain: "acme.example", verified: true });
    const page = domainPageView({ domain, dmarc: { kind: "unavailable", message: HOSTILE }, direct: { kind: "none" } }).toString();
    expect(page).toContain(`The DMARC summary is not available: ${ESCAPED}`);
    expect(page).not.toContain("Direct delivery DNS");
    expect(page).not.toContain("Re-check DNS now");
  });
});
