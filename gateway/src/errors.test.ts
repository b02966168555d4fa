import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ERROR_TABLE, bodyFromError, forWorkspace, publicErrorBody } from "@mailroom/http/errors.js";
import { errorCodePage } from "./routes/error-docs.js";
import { renderDocs } from "./routes/docs-pages.js";
import { HINT_WORKSPACE, hintedCommands, runHint, workspaceOfCall } from "../../cli/testing.js";

describe("bodyFromError", () => {
  it("answers 503 service_unavailable when a service's connection is reset mid-call (it was killed), not 500", () => {
    // What connect-node makes of ECONNRESET / a destroyed stream.
    const reset = new ConnectError("socket hang up", Code.Aborted);
    expect(bodyFromError(reset)).toMatchObject({ statusCode: 503, code: "service_unavailable" });
    expect(bodyFromError(new ConnectError("connect ECONNREFUSED", Code.Unavailable))).toMatchObject({ statusCode: 503 });
  });

  it("answers 503 when the call was written to a socket whose process had died (EPIPE, which connect-node calls Internal)", () => {
    const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE", syscall: "write" });
    const err = new ConnectError("write EPIPE", Code.Internal, undefined, undefined, epipe);
    expect(bodyFromError(err)).toMatchObject({ statusCode: 503, code: "service_unavailable" });
  });

  it("keeps 500 for an error nobody expected", () => {
    expect(bodyFromError(new ConnectError("boom", Code.Internal))).toMatchObject({ statusCode: 500, code: "internal" });
    expect(bodyFromError(new Error("boom"))).toMatchObject({ statusCode: 500, code: "internal" });
  });
});

describe("the error table", () => {
  /** Codes units raise that never reach a public body: internal RPCs between units, and the delivery unit's admin calls. */
  const INTERNAL = new Set([
    "unknown_delivery", // inbound -> delivery lookups (a 503 that the inbound unit retries)
    "workspace_id_required", "content_id_required", "source_required", "invalid_compiled_message", // renderer/content RPC input checks
    "invalid_rate", "invalid_limit", // delivery's admin RPCs (relay rate, captured mail page size), not /v1
    "insufficient_scope", // the accounts unit's Unauthenticated: the gateway answers it as `unauthorized`
    "forward_loop", // the inbound unit's own forward refusal: the received email is kept, not forwarded
  ]);

  /** Every code raised in the units' sources (tests and test doubles aside). */
  function raisedCodes(): Map<string, string> {
    const root = path.resolve(import.meta.dirname, "..", "..");
    const files = [
      ...readdirSync(path.join(root, "services")).map((unit) => path.join(root, "services", unit, "src")),
      path.join(root, "gateway", "src"),
      path.join(root, "console", "src"),
    ].filter((dir) => existsSync(dir)).flatMap((dir) => readdirSync(dir, { recursive: true, encoding: "utf8" }).map((f) => path.join(dir, f)));
    const codes = new Map<string, string>();
    const patterns = [
      /\b(?:badRequest|notFound|conflict|unavailable|unauthenticated)\(\s*"([a-z_/]+)"/g,
      /\b(?:appError|refusal|publicErrorBody)\(\{\s*code:\s*"([a-z_/]+)"/g,
    ];
    for (const file of files) {
      if (!file.endsWith(".ts") || file.endsWith(".test.ts") || /testing\.ts$|\/testing\//.test(file)) continue;
      const source = readFileSync(file, "utf8");
      for (const pattern of patterns) for (const m of source.matchAll(pattern)) codes.set(m[1]!, path.relative(root, file));
    }
    return codes;
  }

  it("has a row (so a page and a docsUrl) for every code a unit can answer", () => {
    const codes = raisedCodes();
    expect(codes.size).toBeGreaterThan(50);
    const missing = [...codes].filter(([code]) => !INTERNAL.has(code) && !Object.hasOwn(ERROR_TABLE, code)).map(([code, file]) => `${code} (${file})`);
    expect(missing, "add these codes to ERROR_TABLE in services/http/src/errors.ts").toEqual([]);
  });

  it("names a command, a setting or an endpoint in every fix, and shows it on the code's page", () => {
    for (const [code, rule] of Object.entries(ERROR_TABLE)) {
      if (!rule.fix) continue;
      expect(rule.fix, code).toMatch(/npx mailroom|MAILROOM_[A-Z_]+|(GET|POST|PUT) \/v1\//);
      expect(errorCodePage(code), code).toContain("What lifts it:");
    }
  });

  it("names only CLI commands that work as written (arguments where the CLI takes them)", async () => {
    const commands = new Set(Object.values(ERROR_TABLE).flatMap((rule) => hintedCommands(`${rule.description} ${rule.fix ?? ""}`)));
    expect([...commands]).toEqual(expect.arrayContaining(["member role <workspace-id> <email> <ROLE>", "member invite <workspace-id> <email>"]));
    for (const command of commands) {
      const { calls, err } = await runHint(command);
      expect(calls.length, `${command}: ${err.join("\n")}`).toBeGreaterThan(0);
      if (/<(workspace-)?id>/.test(command)) expect(workspaceOfCall(calls[0]!), command).toBe(HINT_WORKSPACE);
    }
    // What the old team hints said fails before reaching the accounts unit.
    expect((await runHint("-w <workspace-id> member role <email> <ROLE>")).err.join("\n")).toMatch(/missing required argument 'role'/);
  });

  it("names, for every code but the generic ones, a page of docs/ and a heading on it, shown on the code's page", () => {
    const root = path.resolve(import.meta.dirname, "..", "..");
    const rendered = renderDocs();
    const GENERIC = new Set(["forbidden", "conflict"]); // answered by several topics: the message says which
    const headings = (page: string) => new Set(readFileSync(path.join(root, "docs", page), "utf8").split("\n").filter((l) => /^#{1,6} /.test(l)).map((l) => l.replace(/^#+ /, "")));
    for (const [code, rule] of Object.entries(ERROR_TABLE)) {
      if (GENERIC.has(code)) continue;
      expect(rule.docs, code).toBeDefined();
      const { page, section } = rule.docs!;
      expect(existsSync(path.join(root, "docs", page)), `${code}: docs/${page}`).toBe(true);
      if (section) expect([...headings(page)], `${code}: docs/${page}`).toContain(section);
      // The link reaches the served page (GET /docs/:page) and, for a section, its heading's anchor.
      const href = /<strong>Read more:<\/strong> <a href="\.\.\/([^"#]+)(?:#([^"]+))?">/.exec(errorCodePage(code)!);
      expect(href, code).not.toBeNull();
      const served = rendered.get(href![1]!);
      expect(served, `${code}: /docs/${href![1]}`).toBeDefined();
      expect(href![1]).toBe(page.replace(/\.md$/, ""));
      if (section) expect(served!.html, `${code}: #${href![2]}`).toContain(`id="${href![2]}"`);
    }
    expect(errorCodePage("ab_test_not_waiting")).toContain('<a href="../broadcasts#ab-tests-of-broadcasts">docs/broadcasts.md, section “A/B tests of broadcasts”</a>');
  });

  it("gives every body a docsUrl and appends the fix to the message", () => {
    const gated = publicErrorBody({ code: "broadcast_api_not_enabled", message: "The broadcast API is in early access and not enabled for this workspace" }, "http://localhost:8080/docs/errors");
    expect(forWorkspace(gated, "ws_acme")).toEqual({
      statusCode: 403, error: "Forbidden", code: "broadcast_api_not_enabled",
      message: "The broadcast API is in early access and not enabled for this workspace. Enable it: `npx mailroom workspace update ws_acme --enable broadcastEarlyAccess` (or `flags.broadcastEarlyAccess` in the MAILROOM_BOOTSTRAP file).",
      docsUrl: "http://localhost:8080/docs/errors/broadcast_api_not_enabled",
    });
    expect(publicErrorBody({ code: "unauthorized", message: "Invalid API key" }, "https://x.test/errors")).toMatchObject({ message: "Invalid API key", docsUrl: "https://x.test/errors/unauthorized" });
    expect(publicErrorBody({ code: "toString", message: "m" }, "https://x.test/errors")).toMatchObject({ statusCode: 400, docsUrl: "https://x.test/errors" });
  });
});
