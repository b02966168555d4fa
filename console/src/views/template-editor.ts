/**
 * The Templates page's editing pieces (views/templates.ts uses them): a code editor that is a
 * textarea with line numbers beside it (no editor library: none is a dependency, and the
 * console loads no assets), the mark of a syntax error at its line, and the preview pane
 * (a sandboxed iframe without scripts, shown at desktop width or 375 px, light or dark).
 *
 * Without JavaScript everything works: the numbers cover the lines as saved, the width and
 * scheme toggles are CSS (radio and checkbox); the script only keeps the numbers in step
 * while typing and puts the caret on the line of an error.
 */
import { html, type Html } from "./html.js";

/** Where a save was refused (400 invalid_template with field, line and column). */
export interface TemplateErrorMark {
  field: string;
  line: number;
  column: number;
  message: string;
}

/** The invalid_template body's position, when it carries one. */
export function errorMarkOf(body: { code?: string; message: string; [k: string]: unknown }): TemplateErrorMark | undefined {
  const { field, line, column, reason } = body as { field?: unknown; line?: unknown; column?: unknown; reason?: unknown };
  if (body.code !== "invalid_template" || typeof line !== "number" || !Number.isInteger(line) || line < 1) return undefined;
  // The parser's reason alone: the mark already says where.
  return { field: typeof field === "string" ? field : "html", line, column: typeof column === "number" ? column : 1, message: typeof reason === "string" && reason ? reason : body.message };
}

// The width and scheme toggles reach the frames through :has() (no script). "Dark mode" shows a
// second frame whose copy of the email is made dark (schemeVariant), not the reader's setting.
// Same font, size and line height on both sides, and no soft wraps, so number n stays beside line n.
export const EDITOR_STYLE = `.code-editor{display:flex;align-items:stretch;border:1px solid #6b7280;border-radius:6px;background:#fff;overflow:hidden}
.code-editor .gutter,.code-editor textarea{font:14px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace;margin:0;padding:.5rem}
.code-editor .gutter{flex:none;min-width:3.2em;text-align:right;color:#4a4a4a;background:#f4f4f5;border-right:1px solid #d4d4d8;overflow:hidden;user-select:none;white-space:pre}
.code-editor .gutter span{display:block}.code-editor .gutter span.err{background:#b91c1c;color:#fff;border-radius:3px}
.code-editor textarea{flex:1;min-width:0;border:0;border-radius:0;min-height:24rem;white-space:pre;overflow:auto;resize:vertical;tab-size:2}
.code-editor textarea:focus-visible{outline:none}.code-editor:focus-within{outline:3px solid #1d4ed8;outline-offset:2px}
.code-editor.invalid{border-color:#b91c1c;border-width:2px}
.tpl-split{display:grid;gap:1rem;grid-template-columns:minmax(0,1fr) minmax(0,1fr);align-items:start}
@media (max-width:64rem){.tpl-split{grid-template-columns:minmax(0,1fr)}}
.preview-modes{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center;margin:0 0 .5rem}
.preview-modes .mode{display:inline-flex;align-items:center;white-space:nowrap}.preview-modes input{min-height:auto;margin:0 .3rem 0 0}.preview-modes label{display:inline-flex;align-items:center;font-weight:400;margin:0;min-height:44px}
.preview-frame{overflow-x:auto;background:#e4e4e7;border-radius:6px;padding:.5rem}
.preview-frame iframe.mail{height:36rem;margin:0 auto;color-scheme:light;background:#fff}
.tpl-preview:has(#pw-mobile:checked) iframe.mail{width:375px;max-width:none}
.tpl-preview iframe.mail.dark{display:none;color-scheme:dark;background:#121212}
.tpl-preview:has(#pw-dark:checked) .preview-frame{background:#27272a}
.tpl-preview:has(#pw-dark:checked) iframe.mail.light{display:none}.tpl-preview:has(#pw-dark:checked) iframe.mail.dark{display:block}`;

// Numbers follow the text while typing and scrolling; an error's line gets the caret on load.
export const EDITOR_SCRIPT = `document.querySelectorAll(".code-editor").forEach(function(ed){var ta=ed.querySelector("textarea"),g=ed.querySelector(".gutter");if(!ta||!g)return;
var bad=Number(ed.getAttribute("data-error-line"))||0;
function draw(){var n=ta.value.split("\\n").length,h="";for(var i=1;i<=n;i++)h+=i===bad?'<span class="err">'+i+"</span>":"<span>"+i+"</span>";g.innerHTML=h;g.scrollTop=ta.scrollTop}
ta.addEventListener("input",draw);ta.addEventListener("scroll",function(){g.scrollTop=ta.scrollTop});draw();
if(bad){var lines=ta.value.split("\\n"),at=0;for(var j=0;j<bad-1&&j<lines.length;j++)at+=lines[j].length+1;var col=Number(ed.getAttribute("data-error-column"))||1;ta.focus();ta.setSelectionRange(at+col-1,at+col-1);
ta.scrollTop=Math.max(0,(bad-4)*parseFloat(getComputedStyle(ta).lineHeight))}});`;

/**
 * The live preview: a form with `data-live-preview` (the editor's) posts its unsaved content
 * there as you type (debounced; the session's CSRF token in the form's `_csrf` field and the
 * x-csrf-token header) and the answer's `body` replaces the preview's render. Fields outside the
 * form that belong to it (the sample contact and JSON values) count too. Only the newest
 * answer is shown. Without JavaScript, "Save and preview" does the same by saving.
 */
export const LIVE_PREVIEW_SCRIPT = `(function(){var f=document.querySelector("form[data-live-preview]"),pane=document.querySelector(".tpl-preview");if(!f||!pane||!window.fetch||!window.FormData)return;
var url=f.getAttribute("data-live-preview"),body=pane.querySelector("[data-preview-body]"),status=pane.querySelector("[data-preview-status]"),timer=0,seq=0;if(!body)return;
function done(state,t){pane.setAttribute("data-preview-state",state);if(status)status.textContent=t}
function run(){var n=++seq,data=new URLSearchParams(new FormData(f)),csrf=f.querySelector("input[name=_csrf]");
fetch(url,{method:"POST",credentials:"same-origin",headers:{"x-csrf-token":csrf?csrf.value:""},body:data}).then(function(r){return r.json()}).then(function(d){if(n!==seq)return;
if(typeof d.body==="string"){body.innerHTML=d.body;done("updated","Preview updated")}else done("failed","The preview could not be updated: "+(d.message||"error"))},function(){if(n===seq)done("failed","The preview could not be updated.")})}
function changed(e){var t=e.target;if(!t||t.form!==f||t.type==="submit")return;clearTimeout(timer);++seq;pane.setAttribute("data-preview-state","pending");timer=setTimeout(run,350)}
document.addEventListener("input",changed);document.addEventListener("change",changed)})();`;

export interface CodeEditorOptions {
  id: string;
  name: string;
  label: string;
  value: string;
  /** The form the textarea belongs to (the `form` attribute) when it sits outside it. */
  form?: string;
  readOnly?: boolean;
  error?: TemplateErrorMark;
  /** Shown under the label (what the field is for). */
  hint?: string;
  rows?: number;
}

/** A labelled textarea with a line-number gutter; an error marks its line and is read out with the field. */
export function codeEditor(o: CodeEditorOptions): Html {
  const lines = Math.max(1, o.value.split("\n").length);
  const bad = o.error?.line ?? 0;
  const gutter = Array.from({ length: lines }, (_, i) => (i + 1 === bad ? html`<span class="err">${i + 1}</span>` : html`<span>${i + 1}</span>`));
  const errId = `${o.id}-error`;
  const hintId = `${o.id}-hint`;
  const described = [o.hint ? hintId : "", o.error ? errId : ""].filter(Boolean).join(" ");
  return html`<div class="field"><label for="${o.id}">${o.label}</label>${o.hint ? html`<p class="muted" id="${hintId}" style="margin:0 0 .25rem">${o.hint}</p>` : ""}
<div class="code-editor${o.error ? " invalid" : ""}"${o.error ? html` data-error-line="${bad}" data-error-column="${o.error.column}"` : ""}><pre class="gutter" aria-hidden="true">${gutter}</pre>
<textarea id="${o.id}" name="${o.name}"${o.form ? html` form="${o.form}"` : ""} rows="${o.rows ?? 20}" wrap="off" spellcheck="false" autocapitalize="off" autocomplete="off"${o.readOnly ? html` readonly` : ""}${o.error ? html` aria-invalid="true"` : ""}${described ? html` aria-describedby="${described}"` : ""}>${o.value}</textarea></div>
${o.error ? html`<p class="flash error" id="${errId}" role="alert" style="margin:.5rem 0 0"><strong>Line ${o.error.line}, column ${o.error.column}:</strong> ${o.error.message}</p>` : ""}</div>`;
}

export type PreviewResult =
  | { ok: true; subject: string; html: string; text: string; previewText: string }
  | { ok: false; message: string };

/**
 * What the preview shows of one render (the live preview swaps it in place): subject, the HTML
 * in sandboxed frames (no scripts, no same origin), the text; or why it could not be made.
 */
export function previewBody(name: string, result: PreviewResult): Html {
  return result.ok
    ? html`<dl class="grid" style="margin:0 0 .5rem"><div><dt class="muted">Subject</dt><dd data-preview-subject style="margin:0;font-weight:600">${result.subject || "—"}</dd></div>
<div><dt class="muted">Preview text</dt><dd style="margin:0">${result.previewText || "—"}</dd></div></dl>
<div class="preview-frame"><iframe class="mail light" title="Preview of ${name}" sandbox="" referrerpolicy="no-referrer" srcdoc="${schemeVariant(result.html, "light")}"></iframe>
<iframe class="mail dark" title="Preview of ${name} in dark mode" sandbox="" referrerpolicy="no-referrer" loading="lazy" srcdoc="${schemeVariant(result.html, "dark")}"></iframe></div>
<details><summary>Plain text version</summary><pre data-preview-text>${result.text}</pre></details>`
    : html`<p class="flash error" role="alert" data-preview-error>The preview could not be made: ${result.message}</p>`;
}

/** The preview pane: its controls, the width and colour toggles and the render (previewBody). */
export function previewPane(name: string, result: PreviewResult, controls: Html): Html {
  const shown = html`<div data-preview-body>${previewBody(name, result)}</div><p class="sr-only" role="status" data-preview-status></p>`;
  return html`<section class="card tpl-preview" aria-labelledby="preview-h"><h2 id="preview-h" style="margin-top:0">Preview</h2>${controls}
<div class="preview-modes" role="group" aria-label="Preview width and colours">
<span class="mode"><input type="radio" name="preview-width" id="pw-desktop" checked><label for="pw-desktop">Desktop</label></span>
<span class="mode"><input type="radio" name="preview-width" id="pw-mobile"><label for="pw-mobile">Phone (375 px)</label></span>
<span class="mode"><input type="checkbox" id="pw-dark"><label for="pw-dark">Dark mode</label></span></div>
${shown}</section>`;
}

/**
 * The email as a reader with this colour scheme sees it, whatever the console's own setting:
 * its `prefers-color-scheme` media queries decided (the chosen one always applies, the other
 * never), and in dark a dark canvas and default text, as mail apps that honour dark mode show it.
 */
export function schemeVariant(html: string, scheme: "light" | "dark"): string {
  const other = scheme === "dark" ? "light" : "dark";
  // A width of -1px is not a valid query: the rule never applies. min-width:0 always does.
  const decided = html
    .replace(new RegExp(`prefers-color-scheme\\s*:\\s*${scheme}`, "gi"), "min-width:0px")
    .replace(new RegExp(`prefers-color-scheme\\s*:\\s*${other}`, "gi"), "max-width:-1px");
  const head = `<meta name="color-scheme" content="${scheme}"><style>:root{color-scheme:${scheme}}</style>`;
  // After a doctype, never before it (that would put the frame in quirks mode).
  const doctype = /^\s*<!doctype[^>]*>/i.exec(decided);
  return doctype ? `${doctype[0]}${head}${decided.slice(doctype[0].length)}` : `${head}${decided}`;
}
