import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { isTimeZone } from "@mailroom/kit/time-zones.js";
import { LiquidSyntaxError, RenderFailure } from "./engine.js";
import { compileMjml } from "./mjml.js";
import { ParsedTemplate } from "./template.js";

/**
 * Every worked example of docs/templates.md, rendered by the real engine and compared with the
 * output the page shows: the page and the engine cannot drift apart.
 *
 * A fenced block takes part when its info string names `<example>.<part>` or
 * `<example>/<case>.<part>` after the language, e.g. ```` ```liquid receipt.html ````:
 *
 * - the template (per example): `subject`, `html`, `text`, `mjml` (an MJML template's html),
 *   `layout-html`, `layout-text` (the layout it names), `snippet-<name>` (a snippet it renders);
 * - a send (per case): `variables` and `send` (JSON: `{ to, workspaceTimeZone }`), then what
 *   it gives: `expected-subject`, `expected-html`, `expected-text` (exact),
 *   `expected-html-contains` (each line somewhere in the HTML), `parse-error` (JSON, the
 *   refusal's field, line, column and reason) or `render-error` (the failure's message).
 *
 * Every `liquid` block of the page must be such a part, so no Liquid on the page goes unchecked.
 */

const PAGE = new URL("../../../../docs/templates.md", import.meta.url);

const TEMPLATE_PARTS = new Set(["subject", "html", "text", "mjml", "layout-html", "layout-text"]);
const CASE_PARTS = new Set(["variables", "send", "expected-subject", "expected-html", "expected-text", "expected-html-contains", "parse-error", "render-error"]);

interface Block {
  lang: string;
  tag?: string;
  body: string;
  line: number;
}

interface Case {
  parts: Map<string, Block>;
}

interface Example {
  name: string;
  parts: Map<string, Block>;
  cases: Map<string, Case>;
}

function blocksOf(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S+)(?: +(\S+))?\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    if (i === lines.length) throw new Error(`docs/templates.md:${start + 1}: the block is never closed`);
    blocks.push({ lang: open[1]!, tag: open[2], body: body.join("\n"), line: start + 1 });
  }
  return blocks;
}

function examplesOf(blocks: Block[]): Map<string, Example> {
  const examples = new Map<string, Example>();
  for (const block of blocks) {
    if (!block.tag) {
      if (block.lang === "liquid") throw new Error(`docs/templates.md:${block.line}: a liquid block must be part of an example (\`\`\`liquid <example>.<part>) so it is checked`);
      continue;
    }
    const m = /^([a-z0-9-]+)(?:\/([a-z0-9-]+))?\.([a-z0-9-]+)$/.exec(block.tag);
    if (!m) throw new Error(`docs/templates.md:${block.line}: "${block.tag}" is not <example>.<part> or <example>/<case>.<part>`);
    const [, name, caseName = "", part] = m as unknown as [string, string, string | undefined, string];
    const example = examples.get(name) ?? { name, parts: new Map(), cases: new Map() };
    examples.set(name, example);
    const isTemplatePart = TEMPLATE_PARTS.has(part) || part.startsWith("snippet-");
    if (isTemplatePart && caseName) throw new Error(`docs/templates.md:${block.line}: ${part} belongs to the example, not to a case`);
    if (!isTemplatePart && !CASE_PARTS.has(part)) throw new Error(`docs/templates.md:${block.line}: unknown part "${part}"`);
    const into = isTemplatePart ? example.parts : (example.cases.get(caseName) ?? example.cases.set(caseName, { parts: new Map() }).get(caseName)!).parts;
    if (into.has(part)) throw new Error(`docs/templates.md:${block.line}: ${block.tag} appears twice`);
    into.set(part, block);
  }
  return examples;
}

const json = (block: Block | undefined): Record<string, unknown> => {
  if (!block) return {};
  try {
    return JSON.parse(block.body) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`docs/templates.md:${block.line}: ${block.tag} is not JSON: ${(err as Error).message}`);
  }
};

/** The example's template as a send renders it (MJML compiled first, as a save does). */
async function parse(example: Example): Promise<ParsedTemplate> {
  const text = (part: string) => example.parts.get(part)?.body ?? "";
  let html = text("html");
  const mjml = example.parts.get("mjml");
  if (mjml) {
    const compiled = await compileMjml(mjml.body);
    if ("error" in compiled) throw new Error(`docs/templates.md:${mjml.line}: MJML line ${compiled.error.line}: ${compiled.error.message}`);
    html = compiled.html;
  }
  const layout = example.parts.has("layout-html") ? { html: text("layout-html"), text: text("layout-text") } : undefined;
  const snippets = [...example.parts].filter(([part]) => part.startsWith("snippet-")).map(([part, block]) => ({ name: part.slice("snippet-".length), html: block.body }));
  return ParsedTemplate.parse({ key: example.name, fields: { subject: text("subject"), html, text: text("text"), previewText: "" }, layout, snippets });
}

/** One send: the zone is the values' `timezone` (a contact's) when it is a zone, else the workspace's. */
function render(template: ParsedTemplate, c: Case) {
  const variables = json(c.parts.get("variables"));
  const send = json(c.parts.get("send"));
  const zone = typeof variables.timezone === "string" && isTimeZone(variables.timezone) ? variables.timezone : String(send.workspaceTimeZone ?? "UTC");
  return template.render(variables, { email: String(send.to ?? "ann@example.com"), timeZone: zone });
}

const examples = examplesOf(blocksOf(readFileSync(PAGE, "utf8")));

describe("docs/templates.md", () => {
  it("shows the worked examples issue 47 asks for, each with what it renders", () => {
    for (const name of ["receipt", "fallback-name", "plan", "layout"]) expect([...examples.keys()]).toContain(name);
    for (const example of examples.values()) {
      expect(example.cases.size, `${example.name} has no case`).toBeGreaterThan(0);
      for (const [caseName, c] of example.cases) {
        const expectations = [...c.parts.keys()].filter((p) => p.startsWith("expected-") || p.endsWith("-error"));
        expect(expectations.length, `${example.name}/${caseName} shows no result`).toBeGreaterThan(0);
      }
    }
  });

  for (const example of examples.values()) {
    for (const [caseName, c] of example.cases) {
      it(`${example.name}${caseName ? `/${caseName}` : ""} renders as the page says`, async () => {
        const parseError = c.parts.get("parse-error");
        if (parseError) {
          const err = await parse(example).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err, `docs/templates.md:${parseError.line}`).toBeInstanceOf(LiquidSyntaxError);
          const { field, line, column, reason } = err as LiquidSyntaxError;
          expect({ field, line, column, reason }, `docs/templates.md:${parseError.line}`).toEqual(json(parseError));
          return;
        }
        const template = await parse(example);
        const renderError = c.parts.get("render-error");
        if (renderError) {
          let failure: unknown;
          try {
            render(template, c);
          } catch (err) {
            failure = err;
          }
          expect(failure, `docs/templates.md:${renderError.line}`).toBeInstanceOf(RenderFailure);
          expect((failure as Error).message, `docs/templates.md:${renderError.line}`).toBe(renderError.body);
          return;
        }
        const out = render(template, c);
        for (const [part, actual] of [["expected-subject", out.subject], ["expected-html", out.html], ["expected-text", out.text]] as const) {
          const expected = c.parts.get(part);
          if (expected) expect(actual, `docs/templates.md:${expected.line}`).toBe(expected.body);
        }
        const contains = c.parts.get("expected-html-contains");
        if (contains) for (const line of contains.body.split("\n").filter((l) => l.trim())) expect(out.html, `docs/templates.md:${contains.line}`).toContain(line);
      });
    }
  }
});
