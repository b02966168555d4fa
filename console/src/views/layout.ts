/**
 * The console's page shell: the views (the document, header and nav, flash message). What the
 * shell shows (which links a session may follow, the docs page of a section) is layout.ts.
 */
import { CONSOLE_PREFIX, type Flash } from "../types.js";
import { consolePageLinks } from "./cli-hints.js";
import { html, trusted, type Html } from "./html.js";

// Contrast: text #1a1a1a on white, links #1d4ed8 (7:1), muted #4a4a4a (8.9:1); badges at least 4.5:1.
const STYLE = `*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1a1a1a;background:#f6f7f9;overflow-wrap:break-word}
a{color:#1d4ed8}a:hover{color:#1e3a8a}
:focus-visible{outline:3px solid #1d4ed8;outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem 1rem;z-index:10}.skip:focus{left:0}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
header.top{background:#111827;color:#fff}
header.top .bar{max-width:72rem;margin:0 auto;padding:.5rem 1rem;display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1rem}
header.top .brand{font-weight:700;color:#fff;text-decoration:none;margin-right:auto}
header.top .ws{color:#d1d5db;font-size:.9rem;overflow-wrap:anywhere}
.nav-toggle,.nav-button{display:none}
nav.main ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem}
nav.main a,nav.main button{display:inline-block;color:#fff;text-decoration:none;padding:.6rem .75rem;border-radius:6px;min-height:44px;font:inherit;background:none;border:0;cursor:pointer}
nav.main a:hover,nav.main button:hover{background:#374151;color:#fff}
nav.main a[aria-current=page]{background:#fff;color:#111827;font-weight:600}
nav.main form{margin:0}
main{max-width:72rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.6rem;line-height:1.25;margin:0 0 1rem}h2{font-size:1.2rem;margin:1.75rem 0 .5rem}h3{font-size:1.05rem;margin:1rem 0 .25rem}
.card{background:#fff;border:1px solid #d4d4d8;border-radius:8px;padding:1rem;margin:0 0 1rem}
.grid{display:grid;gap:1rem;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr))}
.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end}
.muted{color:#4a4a4a}
.flash{border-left:4px solid #15803d;background:#f0fdf4;padding:.75rem 1rem;margin:0 0 1rem;border-radius:4px}
.flash.error{border-color:#b91c1c;background:#fef2f2}
label{display:block;font-weight:600;margin:0 0 .25rem}
input,select,textarea{font:inherit;min-height:44px;padding:.5rem .6rem;border:1px solid #6b7280;border-radius:6px;background:#fff;color:#1a1a1a;max-width:100%}
textarea{width:100%;min-height:8rem}
.field{margin:0 0 .75rem}
button,.button{font:inherit;display:inline-block;min-height:44px;padding:.55rem 1.1rem;border:2px solid #1d4ed8;border-radius:6px;background:#1d4ed8;color:#fff;cursor:pointer;text-decoration:none}
button:hover,.button:hover{background:#1e3a8a;border-color:#1e3a8a;color:#fff}
button.secondary,.button.secondary{background:#fff;color:#1d4ed8}
button.secondary:hover,.button.secondary:hover{background:#eff4ff;color:#1e3a8a}
button.danger{background:#b91c1c;border-color:#b91c1c}
button.small{min-height:36px;padding:.25rem .6rem;font-size:.9rem}
form{margin:0}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin:1rem 0}
.table-wrap{overflow-x:auto;background:#fff;border:1px solid #d4d4d8;border-radius:8px}
table.data{border-collapse:collapse;width:100%;font-size:.95rem}
table.data th,table.data td{text-align:left;padding:.5rem .75rem;border-bottom:1px solid #e4e4e7;vertical-align:top}
table.data th{background:#f4f4f5;font-weight:600}table.data thead th{white-space:nowrap}
table.data td.num,table.data th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9rem;overflow-wrap:anywhere}
pre{white-space:pre-wrap;background:#f4f4f5;padding:.75rem;border-radius:6px;margin:0}
code.value{display:block;word-break:break-all;background:#f4f4f5;padding:.35rem .5rem;border-radius:4px}
code.value.one-line{white-space:nowrap;word-break:keep-all;overflow-wrap:normal;overflow-x:auto;max-width:100%}
.badge{display:inline-block;white-space:nowrap;padding:.1rem .55rem;border-radius:999px;font-size:.85rem;font-weight:600;border:1px solid currentColor}
.badge.ok{color:#166534;background:#f0fdf4}.badge.warn{color:#854d0e;background:#fefce8}.badge.bad{color:#991b1b;background:#fef2f2}.badge.info{color:#1e40af;background:#eff6ff}
iframe.mail{display:block;width:100%;height:70vh;border:1px solid #8a8a8a;border-radius:6px;background:#fff}
ol.timeline{list-style:none;padding:0;margin:0;border-left:3px solid #d4d4d8}
ol.timeline li{position:relative;padding:.25rem 0 .75rem 1rem}
ol.timeline li::before{content:"";position:absolute;left:-.5rem;top:.6rem;width:.75rem;height:.75rem;border-radius:50%;background:#1d4ed8}
ol.timeline li.bad::before{background:#b91c1c}ol.timeline li.ok::before{background:#15803d}
svg.chart{width:100%;height:auto;max-width:100%}
.chart-plot{position:relative;height:var(--plot-h,220px);margin:.75rem .5rem 2.25rem var(--gutter,3rem)}
.chart-plot>svg.chart{position:absolute;inset:0;width:100%;height:100%;overflow:visible}
.chart-plot .tick{position:absolute;font-size:.8125rem;line-height:1.2;color:#4a4a4a;white-space:nowrap;font-variant-numeric:tabular-nums}
.chart-plot .tick.y{right:calc(100% + .4rem);transform:translateY(-50%);max-width:calc(var(--gutter,3rem) - .5rem);overflow:hidden;text-overflow:ellipsis}
.chart-plot .tick.x{top:calc(100% + .35rem);transform:translateX(-50%)}
.chart-plot .tick.x.start{transform:none}.chart-plot .tick.x.end{transform:translateX(-100%)}
.chart-plot .tick.v{transform:translate(.35rem,-50%);color:#1a1a1a}
.chart-plot.groups{--gutter:10rem}.chart-plot.groups .tick.y{color:#1a1a1a;font-size:.875rem}
ul.legend{list-style:none;padding:0;margin:.25rem 0 0;display:flex;flex-wrap:wrap;gap:.25rem 1rem;font-size:.9rem}
.check{display:flex;align-items:flex-start;gap:.5rem}.check input{flex:none;min-height:auto;margin:.3rem 0 0}.check label{display:block;margin:0;min-width:0}
@media (max-width:47.99rem){header.top .bar{padding:.25rem .75rem;gap:0 .5rem}
header.top .ws{order:3;flex:1 0 100%;font-size:.8rem;line-height:1.4;padding:0 0 .35rem}
.nav-toggle{display:block;position:absolute;opacity:0;width:1px;height:1px;margin:0}
.nav-button{display:inline-flex;align-items:center;gap:.4rem;order:2;min-height:44px;padding:.4rem .75rem;margin:0;border:1px solid #6b7280;border-radius:6px;color:#fff;font-weight:600;cursor:pointer}
.nav-button::before{content:"";width:1rem;height:.7rem;border-block:2px solid currentColor;background:linear-gradient(currentColor,currentColor) center/100% 2px no-repeat}
.nav-button .current{font-weight:400;color:#d1d5db}
.nav-toggle:focus-visible+.nav-button{outline:3px solid #93c5fd;outline-offset:2px}
.nav-toggle:checked+.nav-button{background:#374151}
nav.main{order:4;flex:1 0 100%}.nav-toggle:not(:checked)~nav.main{display:none}
nav.main ul{display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));padding:0 0 .5rem}
nav.main a,nav.main button{display:block;width:100%;text-align:left}}
@media (max-width:40rem){main{padding:1rem .75rem 2rem}h1{font-size:1.35rem}nav.main a,nav.main button{padding:.5rem .55rem}
table.data.stack thead{position:absolute;left:-9999px}table.data.stack tr{display:block;border-bottom:1px solid #d4d4d8}
table.data.stack td{display:block;border:0;padding:.25rem .75rem}table.data.stack td[data-label]::before{content:attr(data-label) ": ";font-weight:600}
table.data.stack th[scope=row]{display:block;border:0;padding:.5rem .75rem .25rem}table.data.stack td.num{text-align:left}
.chart-plot .tick.minor{display:none}.chart-plot.groups{--gutter:6.5rem}}`;

// Progressive enhancement only: copy buttons and confirmations; the pages work without it.
const SCRIPT = `document.addEventListener("click",function(e){var b=e.target.closest&&e.target.closest("button[data-copy]");if(!b)return;
var t=b.getAttribute("data-copy"),l=b.textContent;function done(ok){b.textContent=ok?"Copied":"Press Ctrl+C";setTimeout(function(){b.textContent=l},1500)}
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(function(){done(true)},function(){done(false)})}
else{var a=document.createElement("textarea");a.value=t;a.setAttribute("readonly","");a.style.position="fixed";a.style.opacity="0";document.body.appendChild(a);a.select();var ok=false;try{ok=document.execCommand("copy")}catch(x){}document.body.removeChild(a);done(ok)}});
document.addEventListener("submit",function(e){var m=e.target.getAttribute&&e.target.getAttribute("data-confirm");if(m&&!confirm(m))e.preventDefault()});
document.querySelectorAll("button[data-copy]").forEach(function(b){b.hidden=false});`;

// An envelope on the header's colour, inline (no asset to serve).
const FAVICON = `data:image/svg+xml,${encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#111827"/><rect x="6" y="9" width="20" height="14" rx="2" fill="#fff"/><path d="M7 10l9 7 9-7" fill="none" stroke="#1d4ed8" stroke-width="2.5" stroke-linejoin="round"/></svg>`)}`;

function documentView(title: string, inner: Html): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex"><link rel="icon" href="${FAVICON}">
<title>${title} · Mailroom</title><style>${trusted(STYLE)}</style></head>
<body>${inner}<script>${trusted(SCRIPT)}</script></body></html>`;
}

/** The one-shot message at the top of a page (plain text); an error's CLI commands link their console pages. */
export function flashView(flash?: Flash): Html | "" {
  if (!flash) return "";
  const error = flash.kind === "error";
  return html`<div class="flash${error ? " error" : ""}" role="${error ? "alert" : "status"}">${flash.message}${error ? trusted(consolePageLinks(flash.message)) : ""}</div>`;
}

/** A link of the nav; `current` marks the page shown (aria-current). */
export interface NavLink {
  href: string;
  label: string;
  current: boolean;
}

export interface ConsoleDocument {
  title: string;
  workspace: string;
  readOnly: boolean;
  /** The member's address, or "key <name>". */
  who: string;
  role: string;
  links: NavLink[];
  /** The current section's label, shown beside "Menu" on a phone. */
  currentLabel?: string;
  docsHref: string;
  /** The sign-out form's hidden CSRF input. */
  signOut: Html;
  flash: Html | "";
  body: Html;
}

/** A whole signed-in page: skip link, header with the workspace and the nav, then the body in <main>. */
export function consoleDocument(d: ConsoleDocument): Html {
  const items = d.links.map((l) => html`<li><a href="${l.href}"${l.current ? html` aria-current="page"` : ""}>${l.label}</a></li>`);
  return documentView(d.title, html`<a class="skip" href="#content">Skip to content</a>
<header class="top"><div class="bar"><a class="brand" href="${CONSOLE_PREFIX}">Mailroom</a>
<span class="ws">Workspace: <strong>${d.workspace}</strong>${d.readOnly ? " (read only)" : ""}
· ${d.who} (${d.role})</span>
<input type="checkbox" id="nav-open" class="nav-toggle" aria-controls="console-nav"><label for="nav-open" class="nav-button">Menu${d.currentLabel ? html`<span class="current"><span class="sr-only">, current page: </span>${d.currentLabel}</span>` : ""}</label>
<nav class="main" id="console-nav" aria-label="Console"><ul>${items}<li><a href="${d.docsHref}" target="_blank" rel="noopener">Docs</a></li><li><form method="post" action="${CONSOLE_PREFIX}/sign-out">${d.signOut}<button type="submit">Sign out</button></form></li></ul></nav></div></header>
<main id="content" tabindex="-1">${d.flash}${d.body}</main>`);
}

/** A page without the nav: sign-in, and errors of visitors without a session. */
export function plainDocument(d: { title: string; flash: Html | ""; body: Html }): Html {
  return documentView(d.title, html`<a class="skip" href="#content">Skip to content</a>
<header class="top"><div class="bar"><a class="brand" href="${CONSOLE_PREFIX}">Mailroom</a></div></header>
<main id="content" tabindex="-1" style="max-width:34rem">${d.flash}${d.body}</main>`);
}
