import { describe, expect, it } from "vitest";
import { forWorkspace, publicErrorBody } from "@mailroom/http/errors.js";
import { consolePageLinks } from "./cli-hints.js";
import { plainPage } from "../layout.js";

/**
 * The API's error messages name CLI commands; in the console the same message links the page
 * that does it (issue 45: "where a console page exists, link to the page").
 */
describe("console: CLI hints link their console page", () => {
  const message = (code: string, text: string) => forWorkspace(publicErrorBody({ code, message: text }), "ws_a").message;

  it("links Domains for an unverified sender, Templates for a missing template, Suppressions for a suppressed address", () => {
    const from = message("campaigns/invalid_from_email", "news@other.test is not a verified sender of this workspace.");
    expect(from).toContain("npx mailroom -w ws_a domain add <domain>");
    expect(consolePageLinks(from)).toBe(' <span class="hint">In the console: <a href="/console/domains" data-console-page="domains">Domains</a>.</span>');
    expect(consolePageLinks("Create it with `POST /v1/templates` or `npx mailroom -w ws_a template create --name x`.")).toContain('href="/console/templates"');
    expect(consolePageLinks("Only if the recipient asked: `npx mailroom -w ws_a suppression remove ann@x.test`.")).toContain('href="/console/suppressions"');
    expect(consolePageLinks("`npx mailroom member role ws_a ann@x.test EDITOR`")).toContain('href="/console/team"');
    expect(consolePageLinks("made with `npx mailroom -w ws_a key create --role ADMIN`")).toContain('href="/console/keys"');
    // Operator commands have no console page; a message naming none gets nothing.
    expect(consolePageLinks("`npx mailroom workspace update ws_a --enable broadcastEarlyAccess`")).toBe("");
    expect(consolePageLinks("Domain add failed")).toBe("");
  });

  it("shows the link after an error flash, not after a success", () => {
    const from = message("campaigns/invalid_from_email", "news@other.test is not verified.");
    expect(plainPage({ title: "x", body: "", flash: { kind: "error", message: from } })).toMatch(/role="alert">[^<]*domain add[\s\S]*?<a href="\/console\/domains"/);
    expect(plainPage({ title: "x", body: "", flash: { kind: "ok", message: "Saved; `npx mailroom -w ws_a domain add x` next." } })).not.toContain('href="/console/domains"');
  });
});
