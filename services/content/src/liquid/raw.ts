import { createHash } from "node:crypto";

/**
 * A raw email's subject, HTML, text and preview text are Liquid (DESIGN §10.2), rendered with
 * the email's own values (its contactProperties). Content without Liquid markup (no `{{ … }}`
 * output and no `{% … %}` tag) is not rendered at all: it is sent byte for byte as before.
 */
export function rawUsesLiquid(...texts: string[]): boolean {
  return texts.some((t) => encloses(t, "{{", "}}") || encloses(t, "{%", "%}"));
}

function encloses(text: string, open: string, close: string): boolean {
  const at = text.indexOf(open);
  return at !== -1 && text.indexOf(close, at + open.length) !== -1;
}

/** The parse cache's key of a raw email's content: a batch of one content parses it once. */
export function rawLiquidKey(fields: { subject: string; html: string; text: string; previewText: string }): string {
  const hash = createHash("sha256");
  for (const part of [fields.subject, fields.html, fields.text, fields.previewText]) hash.update(`${part.length}:`).update(part);
  return `raw:${hash.digest("base64url")}`;
}
