/**
 * The layout's string helpers as view markup: each escapes its own text (layout.ts), so its
 * result goes into a template as it is. Shared by the views of several pages.
 */
import { formatTime, statusBadge, type Tone } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

/** A status pill (statusBadge). */
export const badge = (text: string, tone: Tone): Html => trusted(statusBadge(text, tone));

/** A date inside <time>, or an em dash (formatTime). */
export const time = (date: Date | undefined): Html => trusted(formatTime(date));

/** A hidden form field the caller built (csrfField, anonymousCsrfField). */
export const field = (markup: string): Html => trusted(markup);

/** A "Copy" button (shown by the layout's script) for a value on the page. */
export const copyButton = (text: string, what: string): Html =>
  html`<button type="button" class="secondary small" data-copy="${text}" hidden aria-label="Copy ${what}">Copy</button>`;
