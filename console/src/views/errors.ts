/**
 * The console's error page: the view. The handlers (error and not-found) are pages/errors.ts.
 */
import { CONSOLE_PREFIX } from "../types.js";
import { consolePageLinks } from "./cli-hints.js";
import { html, trusted, type Html } from "./html.js";

const TITLES: Record<number, string> = {
  400: "That did not work",
  401: "Please sign in",
  403: "Not allowed",
  404: "Not found",
  409: "That cannot be done now",
  413: "Too large",
  415: "Unsupported form",
  429: "Too many attempts",
  503: "Temporarily unavailable",
};

/** The page title of an error status. */
export function errorTitle(status: number): string {
  return TITLES[status] ?? (status >= 500 ? "Something went wrong" : "That did not work");
}

/** The error page's body: what went wrong (the message as plain text), and where to go from here. */
export function errorView(status: number, message: string, requestId: string): Html {
  return html`<h1>${errorTitle(status)}</h1><p>${message}${trusted(consolePageLinks(message))}</p>${status === 401 ? html`<p><a class="button" href="${CONSOLE_PREFIX}/sign-in">Sign in</a></p>` : ""}
<p class="muted">Error ${status} · request <code>${requestId}</code></p>
<p><a href="${CONSOLE_PREFIX}">Back to the console</a></p>`;
}
