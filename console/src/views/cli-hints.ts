/**
 * Error messages are the API's: some name a CLI command (`npx mailroom -w ws_… domain add
 * <domain>`). In the console, where a page does the same, the message is followed by a link
 * to that page, so nobody is sent to a terminal for what a click does.
 */
import { CONSOLE_PREFIX } from "../types.js";
import { html, render } from "./html.js";

/** A CLI command (as the messages name it) and the console page that does the same. */
const PAGES: Array<{ command: RegExp; path: string; label: string }> = [
  { command: /\bnpx mailroom\b[^`]*?\b(?:domain (?:add|verify|records)|sender add)\b/, path: "/domains", label: "Domains" },
  { command: /\bnpx mailroom\b[^`]*?\btemplate create\b/, path: "/templates", label: "Templates" },
  { command: /\bnpx mailroom\b[^`]*?\bsuppression (?:add|remove)\b/, path: "/suppressions", label: "Suppressions" },
  { command: /\bnpx mailroom\b[^`]*?\bmember (?:add|invite|role|remove|list)\b/, path: "/team", label: "Team" },
  { command: /\bnpx mailroom\b[^`]*?\bkey create\b/, path: "/keys", label: "API keys" },
];

/** HTML after a message: links to the console pages doing what its CLI commands do ("" when none). */
export function consolePageLinks(message: string): string {
  const pages = PAGES.filter((p) => p.command.test(message));
  if (!pages.length) return "";
  const links = pages.map((p, i) => html`${i ? ", " : ""}<a href="${CONSOLE_PREFIX}${p.path}" data-console-page="${p.path.slice(1)}">${p.label}</a>`);
  return render(html` <span class="hint">In the console: ${links}.</span>`);
}
