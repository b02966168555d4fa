/**
 * The console's view layer: hono's `html` tagged template (hono/html). Every value put into a
 * template is escaped (text and attribute values alike) unless it is markup the view layer
 * built: another html`…` or trusted(…). Arrays are joined; null, undefined and false render
 * nothing. Views are pure: data in, markup out; handlers (pages/) make the RPC calls.
 *
 * Why hono/html: escaping is the default, not a call to remember; it keeps the template
 * literals the pages were written in (no JSX build step, no template files read at run time);
 * it has no dependencies and hono is widely used and maintained.
 */
import { html as honoHtml, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** Markup built by the view layer (safe to put into another template unescaped). */
export type Html = HtmlEscapedString;

/** A template whose interpolations are escaped; views are synchronous. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const out = honoHtml(strings, ...values);
  if (out instanceof Promise) throw new Error("console views render synchronously");
  return out;
}

/**
 * Markup built and escaped elsewhere (the layout's helpers, not yet views): put in as it is.
 * Never for text that came from a request or a service.
 */
export const trusted = (markup: string): Html => raw(markup);

/** The finished markup, for the layout (consolePage's body). */
export const render = (view: Html): string => view.toString();
