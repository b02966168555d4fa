import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import MarkdownIt from "markdown-it";
import anchor from "markdown-it-anchor";
import GithubSlugger from "github-slugger";
import { z } from "zod";
import { docsPage, escapeDocsHtml } from "./docs-html.js";
import { defineRoute, type RouteModule } from "./route.js";

/**
 * GET /docs and GET /docs/:page: the repository's `docs/` folder, served as HTML, so the error
 * pages (and the console) can link to the page of a topic. Pages are read and rendered once at
 * start (they ship with the code); only a page that exists is ever served, so the name never
 * reaches the file system. markdown-it with `html: false` escapes any HTML written in a page;
 * headings get GitHub's anchors (github-slugger), so `page.md#heading` links keep working.
 */

/**
 * The repository's docs/: beside this source tree, else under the working directory (a unit
 * bundled elsewhere, as the test harness does, runs from the repository's root); none: no pages.
 */
export const DOCS_DIR = [fileURLToPath(new URL("../../../docs/", import.meta.url)), path.resolve("docs")].find((dir) => existsSync(dir));

interface RenderedPage {
  title: string;
  html: string;
}

/** `api.md#sending` → `api#sending` (a page of this route); other relative links (repository files) become plain text. */
function docsLinks(md: MarkdownIt, pages: Set<string>): void {
  md.core.ruler.push("docs_links", (state) => {
    for (const block of state.tokens) {
      if (block.type !== "inline" || !block.children) continue;
      const dropped: number[] = [];
      block.children.forEach((token, i) => {
        if (token.type !== "link_open") return;
        const href = token.attrGet("href") ?? "";
        if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("#") || href.startsWith("/")) return;
        const [file, hash] = href.split("#") as [string, string | undefined];
        const name = path.posix.basename(file, ".md");
        if (file.endsWith(".md") && !file.includes("/") && pages.has(name)) {
          token.attrSet("href", `${name}${hash ? `#${hash}` : ""}`);
        } else if (file === "../README.md") {
          token.attrSet("href", `./${hash ? `#${hash}` : ""}`);
        } else {
          dropped.push(i);
        }
      });
      // A dropped link keeps its text: its open and matching close tokens render nothing.
      for (const open of dropped) {
        let depth = 0;
        for (let j = open; j < block.children.length; j++) {
          const t = block.children[j];
          if (t.type === "link_open") depth++;
          else if (t.type === "link_close" && --depth === 0) {
            Object.assign(t, { type: "text", tag: "", content: "", nesting: 0 });
            break;
          }
        }
        Object.assign(block.children[open], { type: "text", tag: "", content: "", nesting: 0, attrs: null });
      }
    }
  });
}

/** Every page of `dir`, rendered (name without `.md` → page). */
export function renderDocs(dir: string | undefined = DOCS_DIR): Map<string, RenderedPage> {
  const files = dir === undefined ? [] : readdirSync(dir).filter((f) => f.endsWith(".md")).sort();
  const names = new Set(files.map((f) => f.slice(0, -3)));
  const pages = new Map<string, RenderedPage>();
  for (const file of files) {
    const slugger = new GithubSlugger();
    const md = new MarkdownIt({ html: false, linkify: true });
    md.use(anchor, { slugify: (s: string) => slugger.slug(s) });
    docsLinks(md, names);
    const source = readFileSync(path.join(dir!, file), "utf8");
    const title = /^#\s+(.+)$/m.exec(source)?.[1]?.trim() ?? file.slice(0, -3);
    pages.set(file.slice(0, -3), { title, html: md.render(source) });
  }
  return pages;
}

/** The anchor GitHub (and this route) gives a heading. */
export const headingAnchor = (heading: string) => new GithubSlugger().slug(heading);

const html = z.string().meta({ contentMediaType: "text/html" });
const CACHE = "public, max-age=300";

export const registerDocsPages: RouteModule = (app) => {
  const pages = renderDocs();
  const index = docsPage("Mailroom documentation", `<h1>Mailroom documentation</h1>
<ul>
${[...pages].map(([name, p]) => `<li><a href="docs/${escapeDocsHtml(name)}">${escapeDocsHtml(p.title)}</a></li>`).join("\n")}
<li><a href="docs/errors">API errors</a></li>
</ul>`);

  defineRoute(app, {
    method: "GET",
    url: "/docs",
    operationId: "docsIndex",
    tags: ["Operations"],
    summary: "The documentation's pages",
    description: "An HTML page listing the pages of Mailroom's documentation (the repository's `docs/` folder), which this server serves at `/docs/{page}`.",
    responses: { 200: { description: "The index page.", content: { "text/html": html } } },
    handler: async (_request, reply) => reply.type("text/html; charset=utf-8").header("cache-control", CACHE).send(index),
  });

  defineRoute(app, {
    method: "GET",
    url: "/docs/:page",
    operationId: "docsPage",
    tags: ["Operations"],
    summary: "One page of the documentation",
    description: "A page of the repository's `docs/` folder as HTML (`api`, `broadcasts`, `storage`, …); headings carry GitHub's anchors. The error pages link here.",
    params: z.object({ page: z.string().max(100).meta({ description: "The page's name: its file name without `.md`.", examples: ["api"] }) }),
    responses: {
      200: { description: "The page.", content: { "text/html": html } },
      404: { description: "No such page: a page saying so.", content: { "text/html": html } },
    },
    handler: async (_request, reply, { params }) => {
      const page = pages.get(params.page);
      if (page) {
        return reply.type("text/html; charset=utf-8").header("cache-control", CACHE)
          .send(docsPage(`${page.title} — Mailroom`, `<p><a href="../docs">All pages</a></p>\n${page.html}`));
      }
      return reply
        .code(404)
        .type("text/html; charset=utf-8")
        .send(docsPage("Unknown page", `<h1>Unknown page</h1><p><code>${escapeDocsHtml(params.page)}</code> is not a page of the documentation. See <a href="../docs">all pages</a>.</p>`));
    },
  });
};
