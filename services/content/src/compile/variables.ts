/**
 * Merge variables: `{{ name }}` where name is an ASCII identifier. Spaces inside the
 * braces are tolerated; anything else between braces (`{{ a.b }}`, `{{#if}}`, `{{}}`)
 * is not a variable and stays literal text.
 */
export const BUILT_IN_VARIABLES = ["firstName", "lastName", "email"] as const;
export const SYSTEM_VARIABLES = ["unsubscribeUrl", "manageUrl", "contactId"] as const;

const KNOWN_ALWAYS = new Set<string>([...BUILT_IN_VARIABLES, ...SYSTEM_VARIABLES]);
/** The values a Liquid-rendered message still merges per delivery (their value needs the delivery's token). */
export const SYSTEM_ONLY: ReadonlySet<string> = new Set<string>(SYSTEM_VARIABLES);

const SYSTEM_SLOT = new RegExp(`^\\{\\{(?:${SYSTEM_VARIABLES.join("|")})\\}\\}$`);
/** Whether text is exactly one system value's slot (`{{unsubscribeUrl}}`), which the merge fills per delivery. */
export function isSystemSlot(text: string): boolean {
  return SYSTEM_SLOT.test(text);
}

/** Linear-time: no nested quantifiers, so hostile input cannot make it backtrack badly. */
const VARIABLE_SOURCE = "\\{\\{[ \\t\\r\\n]*([A-Za-z_][A-Za-z0-9_]*)[ \\t\\r\\n]*\\}\\}";

/** A fresh global regex (callers own its lastIndex). */
export function variablePattern(): RegExp {
  return new RegExp(VARIABLE_SOURCE, "g");
}

export type TextPiece = { literal: string } | { variable: string; start: number };

/**
 * Splits text into literal runs and variables, in order; `start` is the offset of `{{`.
 * With `only`, names outside it stay literal text (content a Liquid render already merged,
 * where only the system values are left as slots).
 */
export function splitVariables(text: string, only?: ReadonlySet<string>): TextPiece[] {
  const pieces: TextPiece[] = [];
  if (text.indexOf("{{") === -1) {
    if (text) pieces.push({ literal: text });
    return pieces;
  }
  const re = variablePattern();
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (only && !only.has(m[1])) continue;
    if (m.index > last) pieces.push({ literal: text.slice(last, m.index) });
    pieces.push({ variable: m[1], start: m.index });
    last = m.index + m[0].length;
  }
  if (last < text.length) pieces.push({ literal: text.slice(last) });
  return pieces;
}

/** Variable names in order of first appearance, without duplicates. */
export function findVariables(...texts: string[]): string[] {
  const seen = new Set<string>();
  for (const text of texts) {
    if (!text || text.indexOf("{{") === -1) continue;
    const re = variablePattern();
    for (let m = re.exec(text); m; m = re.exec(text)) seen.add(m[1]);
  }
  return [...seen];
}

export function referencesVariable(text: string, name: string): boolean {
  return text.indexOf("{{") !== -1 && findVariables(text).includes(name);
}

export interface DetectedVariables {
  detected: string[];
  unknown: string[];
}

/**
 * Known: built-ins (firstName, lastName, email), system values (unsubscribeUrl,
 * manageUrl, contactId) and the workspace's custom property slugs. Names are
 * case-sensitive, as slugs are.
 */
export function detectVariables(input: {
  html: string;
  subject: string;
  previewText: string;
  customProperties: readonly string[];
}): DetectedVariables {
  const detected = findVariables(input.subject, input.previewText, input.html);
  const custom = new Set(input.customProperties);
  // Names a Liquid template binds itself (a loop's item, an assign or capture) are no contact's values.
  const bound = boundNames(input.subject, input.previewText, input.html);
  const unknown = detected.filter((name) => !KNOWN_ALWAYS.has(name) && !custom.has(name) && !bound.has(name));
  return { detected, unknown };
}

const BINDS = /\{%-?\s*(?:(?:for|tablerow)\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b|(?:assign|capture)\s+([A-Za-z_][A-Za-z0-9_]*))/g;

function boundNames(...texts: string[]): Set<string> {
  const names = new Set<string>();
  for (const text of texts) {
    if (!text || text.indexOf("{%") === -1) continue;
    for (const m of text.matchAll(BINDS)) names.add(m[1] ?? m[2]!);
    names.add("forloop");
  }
  return names;
}
