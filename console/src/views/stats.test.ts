import { describe, expect, it } from "vitest";
import { overviewView } from "./stats.js";

const HOSTILE = '"><script>alert(1)</script>';
const c = { sent: 4, delivered: 3, opened: 2, clicked: 1, bounced: 1 };

describe("overview view", () => {
  it("escapes the group asked for and the groups' names, in text, titles, ticks and links", () => {
    const page = overviewView({
      from: "2030-01-01", to: "2030-01-02", groupBy: HOSTILE, totals: { ...c, complained: 0 }, transactionalSent: 4,
      days: [{ date: "2030-01-01", c, broadcastSent: 0 }], groups: [{ name: HOSTILE, c }], broadcasts: "none",
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('name="groupBy" value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(page).toContain(", group <strong>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</strong>");
    expect(page).toContain("<title>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;: 4 sent</title>");
    expect(page).toContain('<span class="tick y" style="top:50.000%">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</span>');
    expect(page).toContain('href="/console?groupBy=%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E&amp;from=2030-01-01&amp;to=2030-01-02"');
    expect(page).toContain('data-total="sent">4</div>');
    expect(page).not.toContain("data-split");
  });

  it("splits the total between transactional and broadcast when broadcasts are counted", () => {
    const page = overviewView({
      from: "2030-01-01", to: "2030-01-01", groupBy: "", totals: { ...c, complained: 0 }, transactionalSent: 1,
      days: [], groups: [], broadcasts: { count: 1, sent: 3, truncatedAt: 1000 },
    }).toString();
    expect(page).toContain('<div class="muted" data-split>1 transactional · 3 broadcast</div>');
    expect(page).toContain("(1 broadcast in this range, among the newest 1000 broadcasts)");
    expect(overviewView({ from: "", to: "", groupBy: "", totals: { ...c, complained: 0 }, transactionalSent: 4, days: [], groups: [], broadcasts: "unavailable" }).toString())
      .toContain("Broadcast numbers are unavailable right now");
  });
});
