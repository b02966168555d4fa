import { describe, expect, it } from "vitest";
import { contentDisposition, formatBytes } from "./emails.js";

describe("the email page's attachments", () => {
  it("shows sizes as people read them", () => {
    expect([0, 1023, 1024, 1536, 300 * 1024, 10 * 1024 * 1024, 1024 ** 3 * 2].map(formatBytes)).toEqual(["0 B", "1023 B", "1 KB", "1.5 KB", "300 KB", "10 MB", "2 GB"]);
  });

  it("names the download exactly (RFC 5987) with a safe ASCII fallback, whatever the sender called the file", () => {
    expect(contentDisposition("report.pdf")).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    const tricky = contentDisposition('Q3 "final"\\é (1).pdf');
    expect(tricky).toBe(`attachment; filename="Q3 _final___ (1).pdf"; filename*=UTF-8''Q3%20%22final%22%5C%C3%A9%20%281%29.pdf`);
    // A line break cannot end the header: it is encoded in both forms.
    expect(contentDisposition("a\r\nX-Evil: 1")).not.toMatch(/[\r\n]/);
    expect(contentDisposition("")).toMatch(/^attachment; filename="attachment"/);
  });
});
