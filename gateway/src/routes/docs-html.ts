/** The frame of the documentation's HTML pages (error codes and docs pages alike). */

export const escapeDocsHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export const docsPage = (title: string, inner: string) => `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeDocsHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;color:#222}
code{background:#f3f3f3;padding:0 .2em;border-radius:3px}pre{background:#f6f6f6;padding:.6rem;overflow-x:auto}pre code{background:none}
table{border-collapse:collapse}td,th{padding:.3rem .6rem;text-align:left;vertical-align:top;border-bottom:1px solid #eee}</style>
</head><body>${inner}</body></html>`;
