import { describe, expect, it } from "vitest";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { compile, CTX, clickUrls, render, RECIPIENT, SECRET } from "../testing.js";
import { mergeMessage } from "@mailroom/content/merge.js";
import { parseClickToken, parseRecipientToken, verifyClick } from "@mailroom/content/tokens.js";

const targetOf = (clickUrl: string) => {
  const [linkToken, recipientToken] = clickUrl.split("/t/c/")[1].split("/");
  return verifyClick(SECRET, linkToken, recipientToken)?.link.url;
};

describe("click tracking", () => {
  it("rewrites absolute http(s) links on <a> and <area>, whatever the case of HREF", () => {
    const html =
      '<p><a href="https://a.test/one">1</a> <A HREF="http://b.test/two">2</A></p>' +
      '<map name="m"><area shape="rect" coords="0,0,1,1" HREF="https://c.test/three" alt="c"></map>';
    const { compiled, merged } = render({ html });
    expect(compiled.links.map((l) => l.url)).toEqual(["https://a.test/one", "http://b.test/two", "https://c.test/three"]);
    const urls = clickUrls(merged.html);
    expect(urls.map(targetOf)).toEqual(["https://a.test/one", "http://b.test/two", "https://c.test/three"]);
    // Only the values changed: tags, attribute names and case stay as written.
    expect(merged.html).toContain(`<A HREF="${urls[1]}">2</A>`);
    expect(merged.html).toContain(`<area shape="rect" coords="0,0,1,1" HREF="${urls[2]}" alt="c">`);
  });

  it("keeps query strings and fragments in the signed target, entities decoded", () => {
    const html = '<a href="https://shop.test/p?utm_source=mail&amp;id=7#reviews">x</a>';
    const { merged } = render({ html });
    expect(targetOf(clickUrls(merged.html)[0])).toBe("https://shop.test/p?utm_source=mail&id=7#reviews");
  });

  it("leaves relative, mailto:, tel:, #anchor and protocol-relative links alone", () => {
    const html =
      '<a href="/pricing">a</a><a href="docs/x.html">b</a><a href="mailto:hi@x.test?subject=Hi">c</a>' +
      '<a href="tel:+15551234">d</a><a href="#top">e</a><a href="//cdn.test/x">f</a><a>no href</a><a href>empty</a>';
    const { compiled, merged } = render({ html });
    expect(compiled.links).toHaveLength(0);
    expect(merged.html).toBe(html);
  });

  it("never rewrites the unsubscribe or manage link, and merges them per recipient", () => {
    const html = '<a href="{{unsubscribeUrl}}">Unsubscribe</a> <a href="{{ manageUrl }}">Prefs</a> <a href="https://x.test">x</a>';
    // The broadcast's own Message-ID for this contact (a test send's would differ).
    const { compiled, merged } = render({ html, kind: ContentKind.BROADCAST }, { messageId: "ct_ann.cmp_test@mail.example.test" });
    expect(compiled.links.map((l) => l.url)).toEqual(["https://x.test"]);
    expect(merged.html).toContain(`<a href="${merged.unsubscribeUrl}">Unsubscribe</a>`);
    expect(merged.html).toContain(`<a href="${merged.manageUrl}">Prefs</a>`);
    expect(merged.unsubscribeUrl).toMatch(/^https:\/\/mail\.example\.test\/u\/[\w.-]+$/);
    expect(merged.manageUrl).toBe(`${merged.unsubscribeUrl}?manage=1`);
    expect(parseRecipientToken(SECRET, merged.unsubscribeUrl.split("/u/")[1])).toEqual({
      workspaceId: "ws_test",
      messageId: "", // not in format-3 tokens: content and contact name the message
      email: RECIPIENT.email,
      contactId: "ct_ann",
      contentId: "cmp_test",
    });
  });

  it("does not track links whose URL holds a variable; encodes query values per recipient", () => {
    const html = '<a href="https://shop.test/u/{{contactId}}?e={{email}}&amp;n={{ firstName }}">shop</a>';
    const { compiled, merged } = render({ html }, { email: "a+b@x.test", variables: { firstName: "Zoë & co" } });
    expect(compiled.links).toHaveLength(0);
    // Path variable merged as is, query variables percent-encoded, then HTML-escaped.
    expect(merged.html).toBe('<a href="https://shop.test/u/ct_ann?e=a%2Bb%40x.test&amp;n=Zo%C3%AB%20%26%20co">shop</a>');
  });

  it("is off when trackClicks is false", () => {
    const html = '<a href="https://a.test/">a</a>';
    const { compiled, merged } = render({ html, trackClicks: false });
    expect(compiled.links).toHaveLength(0);
    expect(merged.html).toBe(html);
  });

  it("neutralises javascript:, vbscript: and data: links, even obfuscated", () => {
    const html =
      '<a href="javascript:alert(1)">a</a><a href=" JaVaScRiPt:alert(2)">b</a>' +
      '<a href="jav&#x09;ascript:alert(3)">c</a><a href="vbscript:x">d</a><a href="data:text/html,x">e</a>';
    for (const trackClicks of [true, false]) {
      const { merged } = render({ html, trackClicks });
      expect(merged.html).toBe('<a href="#">a</a><a href="#">b</a><a href="#">c</a><a href="#">d</a><a href="#">e</a>');
    }
  });

  it("signs each link once at compile time with content id, index and url", () => {
    const compiled = compile({ html: '<a href="https://a.test">a</a><a href="https://a.test">again</a>' });
    expect(compiled.links.map((l) => parseClickToken(SECRET, l.token))).toEqual([
      { contentId: "cmp_test", index: 0, url: "https://a.test" },
      { contentId: "cmp_test", index: 1, url: "https://a.test" },
    ]);
  });

  it("handles unquoted and single-quoted hrefs and uses only an element's first href", () => {
    const html = "<a href=https://u.test/x>u</a><a href='https://s.test/y'>s</a><a href=\"https://f.test\" href=\"https://g.test\">f</a>";
    const { compiled, merged } = render({ html });
    expect(compiled.links.map((l) => l.url)).toEqual(["https://u.test/x", "https://s.test/y", "https://f.test"]);
    expect(merged.html).toContain('href="https://g.test">f</a>');
    expect(merged.html).toMatch(/^<a href=https:\/\/mail\.example\.test\/t\/c\/\S+>u<\/a><a href='https:\/\/mail/);
  });

  it("tracks links inside Outlook conditional comments (VML buttons)", () => {
    const html =
      '<!--[if mso]><v:roundrect href="https://btn.test/go" style="x"><center>Go</center></v:roundrect><![endif]-->' +
      '<!--[if !mso]><!--><a href="https://btn.test/go">Go</a><!--<![endif]--><!-- <a href="https://commented.test">x</a> -->';
    const { compiled } = render({ html });
    expect(compiled.links.map((l) => l.url)).toEqual(["https://btn.test/go", "https://btn.test/go"]);
  });

  it("ignores link-like text inside script, style and title", () => {
    const html = '<title><a href="https://t.test">t</a></title><style>a[href="https://s.test"]{}</style><script>x=\'<a href="https://j.test">\'</script>';
    const { compiled, merged } = render({ html });
    expect(compiled.links).toHaveLength(0);
    expect(merged.html).toBe(html);
  });

  it("does not wrap links that already point at our tracking or unsubscribe pages", () => {
    const html = `<a href="${CTX.publicUrl}/u/abc">u</a>`;
    expect(compile({ html }).links).toHaveLength(0);
  });
});

describe("byte-for-byte preservation", () => {
  it("changes nothing but tracked href values", () => {
    const html =
      "<!DOCTYPE html>\n<HTML lang=en><Body   bgcolor='#fff'>\n<!-- keep me -->\n<table cellpadding=0><tr><td style=\"color:red\">" +
      '<a class="btn"   href = "https://x.test/a"   target=_blank>Go &amp; see</a></td></tr></table>\n<p>&nbsp;&copy;</p></Body></HTML>';
    const { merged } = render({ html });
    const [url] = clickUrls(merged.html);
    expect(merged.html).toBe(html.replace("https://x.test/a", url));
  });

  it("keeps malformed markup as it is (unclosed tags, stray quotes)", () => {
    const html = '<div><p>one<p>two<b><i>bad nesting</b></i><a href="https://x.test">x<span title="a"b">';
    const { merged } = render({ html });
    expect(merged.html).toBe(html.replace("https://x.test", clickUrls(merged.html)[0]));
  });
});

describe("unsubscribe footer", () => {
  const footerOf = (html: string) => /You are receiving this email/.test(html);

  it("is appended to broadcasts before </body>", () => {
    const { compiled, merged } = render({ html: "<html><body><p>Hi</p></body></html>", kind: ContentKind.BROADCAST });
    expect(compiled.unsubscribeFooterAdded).toBe(true);
    expect(merged.html).toMatch(/<p>Hi<\/p><div style="[^"]+">You are receiving.*<\/div><\/body><\/html>$/);
    expect(merged.html).toContain(`href="${merged.unsubscribeUrl}"`);
    expect(merged.html).toContain(`href="${merged.manageUrl}"`);
  });

  it("is not added when the HTML references {{unsubscribeUrl}} in an attribute", () => {
    const html = '<body><table data-unsub="{{ unsubscribeUrl }}"><tr><td>Hi</td></tr></table></body>';
    const { compiled, merged } = render({ html, kind: ContentKind.BROADCAST });
    expect(compiled.unsubscribeFooterAdded).toBe(false);
    expect(footerOf(merged.html)).toBe(false);
    expect(merged.html).toBe(`<body><table data-unsub="${merged.unsubscribeUrl}"><tr><td>Hi</td></tr></table></body>`);
  });

  it("is not added when the HTML links {{unsubscribeUrl}}, and the design is left untouched", () => {
    const html = '<p>Bye</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>';
    const { merged } = render({ html, kind: ContentKind.BROADCAST, trackClicks: false });
    expect(merged.html).toBe(`<p>Bye</p><a href="${merged.unsubscribeUrl}">Unsubscribe</a>`);
  });

  it("is appended at the end when there is no </body>, and never to transactional mail", () => {
    expect(render({ html: "<p>Hi", kind: ContentKind.BROADCAST }).merged.html).toMatch(/^<p>Hi<div .*Manage preferences<\/a><\/div>$/);
    expect(footerOf(render({ html: "<p>Hi</p>", kind: ContentKind.TRANSACTIONAL }).merged.html)).toBe(false);
  });

  it("adds an unsubscribe line to a broadcast's given text that lacks one", () => {
    const { merged } = render({ html: "<p>Hi</p>", text: "Hello {{firstName}}", kind: ContentKind.BROADCAST });
    expect(merged.text).toBe(`Hello Ann\n\n--\nUnsubscribe: ${merged.unsubscribeUrl}\nManage preferences: ${merged.manageUrl}`);
  });
});

describe("preheader and open pixel", () => {
  it("inserts the hidden preheader right after <body …>, escaped and merged", () => {
    const html = '<html><head></head><body style="margin:0"><p>Body</p></body></html>';
    const { merged } = render({ html, previewText: "Hi {{firstName}} <3 & more" }, { variables: { firstName: "<Ann>" } });
    expect(merged.html).toMatch(/^<html><head><\/head><body style="margin:0"><div style="display:none;[^"]*">Hi &lt;Ann&gt; &lt;3 &amp; more(&#847;&zwnj;&nbsp;)+<\/div><p>Body<\/p>/);
    expect(merged.previewText).toBe("Hi <Ann> <3 & more");
  });

  it("goes at the start without <body>, after </head> or the doctype when present", () => {
    expect(render({ html: "<p>x</p>", previewText: "P" }).merged.html).toMatch(/^<div style="display:none;[^"]*">P.*<\/div><p>x<\/p>$/);
    expect(render({ html: "<!doctype html><p>x</p>", previewText: "P" }).merged.html).toMatch(/^<!doctype html><div style="display:none/);
    expect(render({ html: "<head><title>t</title></head><p>x</p>", previewText: "P" }).merged.html).toMatch(/^<head><title>t<\/title><\/head><div style="display:none/);
  });

  it("is absent without preview text", () => {
    expect(render({ html: "<body>x</body>" }).merged.html).toBe("<body>x</body>");
  });

  it("adds a 1x1 open beacon before </body> when trackOpens is on: CSS background, and an <img> only Outlook sees", () => {
    const { merged } = render({ html: "<body><p>x</p></body>", trackOpens: true });
    const m = merged.html.match(
      /^<body><p>x<\/p><!--\[if mso\]><img src="(https:\/\/mail\.example\.test\/t\/o\/([\w.-]+))" width="1" height="1" alt="" [^>]*\/><!\[endif\]--><!--\[if !mso\]><!--><div style="width:1px;height:1px;[^"]*background-image:url\('([^']+)'\)[^"]*"><\/div><!--<!\[endif\]--><\/body>$/,
    );
    expect(m).not.toBeNull();
    expect(m![3]).toBe(m![1]);
    expect(parseRecipientToken(SECRET, m![2])?.email).toBe("ann@example.test");
    // No <img> outside a comment: SpamAssassin's HTML_IMAGE_ONLY rules count <img> tags in short HTML.
    expect(merged.html.replace(/<!--[\s\S]*?-->/g, "")).not.toMatch(/<img/i);
    expect(render({ html: "<body>x</body>", trackOpens: false }).merged.html).not.toContain("/t/o/");
  });

  it("puts footer then pixel at the end of a broadcast, once", () => {
    const { merged } = render({ html: "<body>x</body><!-- </body> in a comment -->", kind: ContentKind.BROADCAST, trackOpens: true });
    // One beacon (its two forms carry the same URL: a client renders one).
    expect(merged.html.match(/\/t\/o\//g)).toHaveLength(2);
    expect(merged.html).toMatch(/^<body>x<div .*Manage preferences<\/a><\/div><!--\[if mso\]><img src="[^"]+"[^>]*\/><!\[endif\]--><!--\[if !mso\]><!--><div [^>]*><\/div><!--<!\[endif\]--><\/body><!-- <\/body> in a comment -->$/);
  });
});

describe("plain text", () => {
  it("is generated from the final HTML with links shown and variables merged raw", () => {
    const html =
      "<html><head><style>p{color:red}</style></head><body><h1>Hello {{ firstName }}</h1>" +
      '<p>See <a href="https://x.test/deal?a=1&amp;b=2">the deal</a>, <a href="/rel">relative</a>, ' +
      '<a href="mailto:help@x.test">mail us</a>.</p><img src="https://x.test/logo.png" alt="Logo"></body></html>';
    const { compiled, merged } = render({ html, kind: ContentKind.BROADCAST, trackOpens: true }, { variables: { firstName: "A&B <x>" } });
    expect(compiled.textGenerated).toBe(true);
    const [click] = clickUrls(merged.text);
    expect(targetOf(click)).toBe("https://x.test/deal?a=1&b=2");
    expect(merged.text).toContain("Hello A&B <x>");
    expect(merged.text).toContain(`See the deal [${click}], relative [/rel], mail us [help@x.test].`);
    expect(merged.text).toContain(`Unsubscribe [${merged.unsubscribeUrl}]`);
    expect(merged.text).not.toMatch(/color:red|logo|\/t\/o\//i);
  });

  it("shows per-recipient links the same way as the HTML merges them", () => {
    const { merged } = render({ html: '<a href="https://x.test/?e={{email}}">me</a>' }, { email: "a+b@x.test" });
    expect(merged.text).toBe("me [https://x.test/?e=a%2Bb%40x.test]");
  });

  it("uses the given text as is when there is one", () => {
    const { compiled, merged } = render({ html: '<a href="https://x.test">x</a>', text: "Hi {{firstName}}, <b>raw</b>" });
    expect(compiled.textGenerated).toBe(false);
    expect(merged.text).toBe("Hi Ann, <b>raw</b>");
  });
});

describe("subject and variables", () => {
  it("merges subject raw and lists every variable", () => {
    const { compiled, merged } = render(
      { html: "<p>{{plan}}</p>", subject: "{{firstName}}: your {{ plan }} & more", previewText: "{{lastName}}" },
      { variables: { firstName: "<Ann>", plan: "pro" } },
    );
    expect(merged.subject).toBe("<Ann>: your pro & more");
    expect(compiled.variables).toEqual(["firstName", "plan", "lastName"]);
  });

  it("leaves non-identifier braces and nested templates alone", () => {
    const html = "<p>{{{{firstName}}}} {{ a.b }} {{}} {{#if x}} {{ 1abc }} {{first name}}</p>";
    const { merged } = render({ html });
    expect(merged.html).toBe("<p>{{Ann}} {{ a.b }} {{}} {{#if x}} {{ 1abc }} {{first name}}</p>");
  });

  it("quotes an unquoted attribute value that holds a variable, so a value cannot add attributes", () => {
    const { merged } = render({ html: "<td title={{firstName}} class=x>t</td>" }, { variables: { firstName: 'a onclick=alert(1) "' } });
    expect(merged.html).toBe('<td title="a onclick=alert(1) &quot;" class=x>t</td>');
  });
});

describe("limits and bad input", () => {
  it("refuses broadcast HTML over 500 KB with 413 html_too_large", () => {
    const html = "<p>" + "x".repeat(500 * 1024) + "</p>";
    try {
      compile({ html, kind: ContentKind.BROADCAST });
      expect.unreachable();
    } catch (err) {
      expect(errorInfoOf(err)).toMatchObject({ code: "html_too_large", httpStatus: 413 });
    }
  });

  it("accepts exactly 500 KB for a broadcast", () => {
    const html = "<p>" + "x".repeat(500 * 1024 - 7) + "</p>";
    expect(compile({ html, kind: ContentKind.BROADCAST }).html?.segments.length).toBeGreaterThan(0);
  });

  it("accepts 5 MB of transactional HTML and refuses more", () => {
    const html = "<p>x" + "é".repeat((5 * 1024 * 1024 - 8) / 2) + "</p>";
    expect(Buffer.byteLength(html)).toBe(5 * 1024 * 1024);
    expect(compile({ html }).html?.segments.length).toBeGreaterThan(0);
    expect(() => compile({ html: html + "x" })).toThrow(/HTML is larger/);
  });

  it("requires content and workspace ids (they go into every token)", () => {
    expect(() => compile({ html: "x", contentId: "" })).toThrow(/contentId/);
    expect(() => compile({ html: "x", workspaceId: "" })).toThrow(/workspaceId/);
  });

  it("merges the same compiled message for many recipients independently", () => {
    const compiled = compile({ html: '<a href="https://x.test">{{firstName}}</a>', trackOpens: true });
    const a = mergeMessage(compiled, { ...RECIPIENT, variables: { firstName: "A" } }, CTX);
    const b = mergeMessage(compiled, { ...RECIPIENT, email: "bo@x.test", variables: { firstName: "B" } }, CTX);
    expect(a.html).toContain(">A</a>");
    expect(b.html).toContain(">B</a>");
    expect(a.recipientToken).not.toBe(b.recipientToken);
    expect(parseRecipientToken(SECRET, b.recipientToken)?.email).toBe("bo@x.test");
  });
});

describe("raw content sent as given (literal)", () => {
  const html =
    '<html><body><p>Hi {{name}}, {{ firstName }} {{unsubscribeUrl}}</p>' +
    '<a href="https://x.test/deal?u={{name}}">deal</a> <a href="https://x.test/plain">plain</a> <td title={{firstName}}>t</td></body></html>';
  const literal = () =>
    render({ html, literal: true, subject: "Re: {{name}}", previewText: "Peek {{name}} <b>", text: "", trackOpens: true }, { variables: { name: "Ann", firstName: "Ann" } });

  it("keeps {{…}} in the HTML, subject, preview text and generated text", () => {
    const { compiled, merged } = literal();
    expect(compiled.variables).toEqual([]);
    expect(merged.subject).toBe("Re: {{name}}");
    expect(merged.html).toContain("<p>Hi {{name}}, {{ firstName }} {{unsubscribeUrl}}</p>");
    expect(merged.html).toContain("<td title={{firstName}}>t</td>");
    expect(merged.html).toContain("Peek {{name}} &lt;b&gt;");
    expect(merged.text).toContain("Hi {{name}}, {{ firstName }} {{unsubscribeUrl}}");
    expect(merged.html).not.toContain("Ann");
    expect(merged.text).not.toContain("Ann");
  });

  it("keeps {{…}} in a given text", () => {
    const { merged } = render({ html: "<p>x</p>", text: "Dear {{name}}", literal: true }, { variables: { name: "Ann" } });
    expect(merged.text).toBe("Dear {{name}}");
  });

  it("still tracks links and adds the open pixel", () => {
    const { compiled, merged } = literal();
    const clicks = clickUrls(merged.html);
    expect(clicks).toHaveLength(2);
    expect(targetOf(clicks[0])).toBe("https://x.test/deal?u={{name}}");
    expect(targetOf(clicks[1])).toBe("https://x.test/plain");
    expect(compiled.links.map((l) => l.url)).toEqual(["https://x.test/deal?u={{name}}", "https://x.test/plain"]);
    expect(merged.html).toMatch(/\/t\/o\//);
    expect(clickUrls(merged.text)).toHaveLength(2);
  });

  it("merges templates (not literal) as before", () => {
    const { merged } = render({ html: "<p>Hi {{name}}</p>", subject: "{{name}}" }, { variables: { name: "Ann" } });
    expect(merged.html).toBe("<p>Hi Ann</p>");
    expect(merged.subject).toBe("Ann");
  });
});
