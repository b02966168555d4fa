import { STATUS_CODES } from "node:http";
import { z } from "zod";
import { ERROR_TABLE, codeOfDocsSlug, docsSlug, type DocsSection } from "@mailroom/http/errors.js";
import { docsPage, escapeDocsHtml } from "./docs-html.js";
import { headingAnchor } from "./docs-pages.js";
import { defineRoute, type RouteModule } from "./route.js";

/**
 * GET /docs/errors and GET /docs/errors/:code: the error documentation `docsUrl` points
 * at, generated from ERROR_TABLE (status, meaning, what to do, the docs page of its topic). Codes with `/` use `.`
 * in the path (`campaigns.invalid_from_email`); the encoded `/` is accepted too.
 */

const escape = escapeDocsHtml;
/** The table's descriptions mark code with backticks. */
const prose = (s: string) => escape(s).replace(/`([^`]+)`/g, "<code>$1</code>");
const page = docsPage;

/** `api.md` + its heading → `api#its-heading` (the docs route's page and GitHub's anchor). */
const docsHref = (d: DocsSection) => `${d.page.replace(/\.md$/, "")}${d.section ? `#${headingAnchor(d.section)}` : ""}`;
const docsTitle = (d: DocsSection) => `docs/${d.page}${d.section ? `, section “${d.section}”` : ""}`;

const statusLine = (status: number) => `${status} ${STATUS_CODES[status] ?? ""}`.trim();

export function errorIndexPage(): string {
  const rows = Object.entries(ERROR_TABLE)
    .map(([code, rule]) => `<tr><td><a href="errors/${escape(docsSlug(code))}"><code>${escape(code)}</code></a></td><td>${statusLine(rule.status)}</td></tr>`)
    .join("\n");
  return page("Mailroom API errors", `<h1>API errors</h1>
<p>Every error body is <code>{ statusCode, error, code, message, docsUrl }</code>, plus fields some codes add; a refusal that a setting lifts names the setting or command in its message. Each response carries an <code>x-request-id</code> header: quote it when reporting a problem.</p>
<table><thead><tr><th>code</th><th>HTTP status</th></tr></thead><tbody>
${rows}
</tbody></table>`);
}

export function errorCodePage(code: string): string | undefined {
  const rule = Object.hasOwn(ERROR_TABLE, code) ? ERROR_TABLE[code] : undefined;
  if (!rule) return undefined;
  return page(`${code} — Mailroom API errors`, `<p><a href="../errors">All errors</a></p>
<h1><code>${escape(code)}</code></h1>
<p><strong>HTTP status:</strong> ${statusLine(rule.status)}</p>
<p>${prose(rule.description)}</p>${rule.fix ? `
<p><strong>What lifts it:</strong> ${prose(rule.fix)}</p>` : ""}${rule.docs ? `
<p><strong>Read more:</strong> <a href="../${escape(docsHref(rule.docs))}">${escape(docsTitle(rule.docs))}</a>, in Mailroom's documentation.</p>` : ""}`);
}

const html = z.string().meta({ contentMediaType: "text/html" });

export const registerErrorDocs: RouteModule = (app) => {
  const index = errorIndexPage();
  defineRoute(app, {
    method: "GET",
    url: "/docs/errors",
    operationId: "errorDocsIndex",
    tags: ["Operations"],
    summary: "Documentation of every error code",
    description: "An HTML page listing every `code` an error body can carry, linking to one page per code.",
    responses: { 200: { description: "The index page.", content: { "text/html": html } } },
    handler: async (_request, reply) => reply.type("text/html; charset=utf-8").header("cache-control", "public, max-age=300").send(index),
  });

  defineRoute(app, {
    method: "GET",
    url: "/docs/errors/:code",
    operationId: "errorDocs",
    tags: ["Operations"],
    summary: "Documentation of one error code",
    description: "What `docsUrl` in an error body points at: the HTTP status, the meaning and what to do. A `/` in a code is written `.` (`campaigns.invalid_from_email`).",
    params: z.object({ code: z.string().max(100).meta({ description: "The error code, `/` written as `.`.", examples: ["invalid_payload"] }) }),
    responses: {
      200: { description: "The page of this code.", content: { "text/html": html } },
      404: { description: "No such error code: a page saying so.", content: { "text/html": html } },
    },
    handler: async (_request, reply, { params }) => {
      const body = errorCodePage(codeOfDocsSlug(params.code));
      if (body) return reply.type("text/html; charset=utf-8").header("cache-control", "public, max-age=300").send(body);
      return reply
        .code(404)
        .type("text/html; charset=utf-8")
        .send(page("Unknown error code", `<h1>Unknown error code</h1><p><code>${escape(params.code)}</code> is not an error code of this API. See <a href="../errors">all errors</a>.</p>`));
    },
  });
};
