import { describe, expect, it } from "vitest";
import { errorTitle, errorView } from "./errors.js";

describe("error page view", () => {
  it("escapes the message and the request id", () => {
    const page = errorView(400, 'Bad "name" <script>alert(1)</script>', '"><script>x()</script>').toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("<h1>That did not work</h1><p>Bad &quot;name&quot; &lt;script&gt;alert(1)&lt;/script&gt;</p>");
    expect(page).toContain("request <code>&quot;&gt;&lt;script&gt;x()&lt;/script&gt;</code>");
  });

  it("titles by status, offers sign-in on a 401, and links a CLI command's console page", () => {
    expect(errorTitle(403)).toBe("Not allowed");
    expect(errorTitle(502)).toBe("Something went wrong");
    expect(errorTitle(418)).toBe("That did not work");
    expect(errorView(401, "Sign in again.", "r1").toString()).toContain('<p><a class="button" href="/console/sign-in">Sign in</a></p>');
    expect(errorView(403, "No.", "r1").toString()).not.toContain("/console/sign-in");
    const hinted = errorView(409, "Add it first: `npx mailroom -w ws_1 domain add example.test`.", "r1").toString();
    expect(hinted).toContain('<a href="/console/domains" data-console-page="domains">Domains</a>');
  });
});
