/**
 * The gateway's few HTML pages (unsubscribe, manage, captured mail): one small,
 * self-contained shell. No external assets; readable at phone width; text and controls
 * keep a contrast of at least 4.5:1 and show a visible keyboard focus.
 */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STYLE = `*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;padding:2rem 1rem;max-width:var(--width,34rem);color:#1a1a1a;background:#fff;overflow-wrap:anywhere}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem}h2{font-size:1.15rem;margin:2rem 0 .5rem}
a{color:#1d4ed8}a:hover{color:#1e3a8a}
:focus-visible{outline:3px solid #1d4ed8;outline-offset:2px}
button{font:inherit;min-height:44px;padding:.6rem 1.2rem;border:2px solid #1a1a1a;border-radius:6px;background:#1a1a1a;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1a1a1a}
button:hover{background:#3a3a3a;color:#fff}
form{margin:1rem 0}
input{font:inherit;min-height:44px;padding:.5rem .75rem;border:2px solid #6b6b6b;border-radius:6px;max-width:100%}
.muted{color:#4a4a4a}
.notice{border-left:4px solid #1d4ed8;padding:.5rem 1rem;background:#eff4ff}
ul.mail{list-style:none;padding:0;margin:0}ul.mail li{padding:.75rem 0;border-bottom:1px solid #d4d4d4}
ul.mail a{font-weight:600}
pre{white-space:pre-wrap;background:#f4f4f4;padding:1rem;border-radius:6px;margin:0}
iframe{display:block;width:100%;height:60vh;border:1px solid #8a8a8a;border-radius:6px;background:#fff}`;

export interface PageOptions {
  /** Wider pages (the mail viewer) set a larger max width. */
  width?: string;
}

export function page(title: string, body: string, opts: PageOptions = {}): string {
  const width = opts.width ? ` style="--width:${escapeHtml(opts.width)}"` : "";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body${width}><main>${body}</main></body></html>`;
}
