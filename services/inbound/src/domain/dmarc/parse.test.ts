import { deflateRawSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { zipSync } from "fflate";
import { dmarcFixture, gzip, zip } from "../../dmarc-testing.js";
import { kindOf, parseAggregateXml, readAggregateReports, type DmarcLimits } from "./parse.js";

const GOOGLE = dmarcFixture("google-multi-record.xml");
const OUTLOOK = dmarcFixture("outlook-zip.xml");
const YAHOO = dmarcFixture("yahoo-single-record.xml");

const sum = (rows: { count: number }[]) => rows.reduce((n, r) => n + r.count, 0);

describe("parseAggregateXml (RFC 7489 Appendix C)", () => {
  it("reads a multi-record report: metadata, the published policy and each record's aligned results", () => {
    const { report, skipped } = parseAggregateXml(GOOGLE.toString("utf8"));
    expect(skipped).toBe(0);
    expect(report).toMatchObject({
      orgName: "google.com",
      reportId: "17951328009876543210",
      begin: new Date("2026-11-20T00:00:00Z"),
      end: new Date("2026-11-20T23:59:59Z"),
      policy: { domain: "acme.example", adkim: "r", aspf: "r", p: "none" },
    });
    expect(report.rows).toEqual([
      { sourceIp: "192.0.2.10", count: 120, disposition: "none", dkimAligned: true, spfAligned: true, headerFrom: "acme.example" },
      // auth_results says SPF passed (for the relay's domain): not aligned, so not an aligned pass.
      { sourceIp: "192.0.2.11", count: 30, disposition: "none", dkimAligned: true, spfAligned: false, headerFrom: "acme.example" },
      { sourceIp: "198.51.100.7", count: 5, disposition: "quarantine", dkimAligned: false, spfAligned: false, headerFrom: "acme.example" },
    ]);
    const dkimPass = sum(report.rows.filter((r) => r.dkimAligned));
    const spfPass = sum(report.rows.filter((r) => r.spfAligned));
    expect([sum(report.rows), dkimPass / sum(report.rows), spfPass / sum(report.rows)]).toEqual([155, 150 / 155, 120 / 155]);
  });

  it("reads strict alignment, an IPv6 source (lower-cased), a subdomain's header From and DMARCbis's namespace", () => {
    const outlook = parseAggregateXml(OUTLOOK.toString("utf8")).report;
    expect(outlook.policy).toEqual({ domain: "acme.example", adkim: "s", aspf: "r", p: "reject" });
    expect(outlook.rows.map((r) => [r.sourceIp, r.count, r.disposition, r.headerFrom])).toEqual([
      ["192.0.2.10", 40, "none", "acme.example"],
      ["2001:db8::25", 8, "reject", "acme.example"],
      ["203.0.113.9", 3, "none", "news.acme.example"],
    ]);
    const yahoo = parseAggregateXml(YAHOO.toString("utf8")).report;
    // "ACME.example." as published: lower-cased, without the root's dot.
    expect(yahoo).toMatchObject({ orgName: "Yahoo", reportId: "1795305600.372914", policy: { domain: "acme.example" } });
    expect(yahoo.rows).toEqual([{ sourceIp: "192.0.2.10", count: 1, disposition: "none", dkimAligned: true, spfAligned: true, headerFrom: "acme.example" }]);
  });

  it("leaves out records without a valid source IP or count, and refuses what is not a report", () => {
    const broken = GOOGLE.toString("utf8").replace("<source_ip>192.0.2.11</source_ip>", "<source_ip>not-an-ip</source_ip>").replace("<count>5</count>", "<count>-5</count>");
    const { report, skipped } = parseAggregateXml(broken);
    expect(skipped).toBe(2);
    expect(report.rows.map((r) => r.sourceIp)).toEqual(["192.0.2.10"]);
    expect(() => parseAggregateXml("<html><body>hello</body></html>")).toThrow(/no <feedback> element/);
    expect(() => parseAggregateXml(GOOGLE.toString("utf8").replace(/<report_id>.*<\/report_id>/, ""))).toThrow(/report_id/);
    expect(() => parseAggregateXml(GOOGLE.toString("utf8").replace("<end>1795219199</end>", "<end>1795000000</end>"))).toThrow(/date_range/);
    expect(() => parseAggregateXml(GOOGLE.toString("utf8").replace("<domain>acme.example</domain>", "<domain>not a domain</domain>"))).toThrow(/policy_published/);
  });

  it("refuses a DTD (no entity expansion) and a report over the record limit", () => {
    const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><feedback><report_metadata><org_name>&lol2;</org_name></report_metadata></feedback>`;
    expect(() => parseAggregateXml(laughs)).toThrow(/DTD/);
    expect(() => parseAggregateXml(GOOGLE.toString("utf8"), 2)).toThrow(/3 records, over the 2 limit/);
  });
});

describe("readAggregateReports: the files of a message", () => {
  it("unpacks an attached gzip, a zip (with data descriptors) and plain XML, by their bytes whatever their labels", async () => {
    const read = readAggregateReports([
      { filename: "google.com!acme.example!1795132800!1795219199.xml.gz", mimeType: "application/gzip", content: gzip(GOOGLE) },
      { filename: "enterprise.protection.outlook.com!acme.example!1795219200!1795305599.zip", mimeType: "application/octet-stream", content: await zip({ "enterprise.protection.outlook.com!acme.example!1795219200!1795305599.xml": OUTLOOK }) },
      { filename: "yahoo.xml", mimeType: "text/xml", content: YAHOO.toString("utf8") },
      { filename: "logo.png", mimeType: "image/png", content: new Uint8Array([0x89, 0x50, 0x4e, 0x47]) },
    ]);
    expect(read.refused).toEqual([]);
    expect(read.reports.map((r) => [r.orgName, r.rows.length, sum(r.rows)])).toEqual([
      ["google.com", 3, 155],
      ["Enterprise Outlook", 3, 51],
      ["Yahoo", 1, 1],
    ]);
  });

  it("reads every XML file of a zip and skips its other entries", () => {
    const read = readAggregateReports([{ filename: "r.zip", mimeType: "application/zip", content: zipSync({ "a.xml": GOOGLE, "README.txt": new TextEncoder().encode("hi"), "b.xml": YAHOO }) }]);
    expect(read.reports.map((r) => r.orgName).sort()).toEqual(["Yahoo", "google.com"]);
  });

  it("names the type of a part by its bytes first, then its type and name", () => {
    const none = new Uint8Array([0x3c]);
    expect(kindOf({ mimeType: "application/octet-stream", content: none }, gzip(GOOGLE))).toBe("gzip");
    expect(kindOf({ mimeType: "text/plain", content: none }, new Uint8Array([0x50, 0x4b, 3, 4]))).toBe("zip");
    expect(kindOf({ filename: "report.XML", mimeType: "application/octet-stream", content: none }, none)).toBe("xml");
    expect(kindOf({ mimeType: "application/x-gzip", content: none }, none)).toBe("gzip");
    expect(kindOf({ mimeType: "text/plain", content: none }, none)).toBeUndefined();
  });

  it("refuses, without unpacking them, a gzip bomb, a zip bomb and a zip of too many files; reads what else the message holds", () => {
    const limits: DmarcLimits = { maxXmlBytes: 1024 * 1024, maxRecords: 1000, maxFiles: 3 };
    const zeros = new Uint8Array(8 * 1024 * 1024);
    const zipBomb = zipSync({ "bomb.xml": zeros });
    const read = readAggregateReports([
      { filename: "bomb.xml.gz", mimeType: "application/gzip", content: gzipSync(zeros) },
      { filename: "bomb.zip", mimeType: "application/zip", content: zipBomb },
      { filename: "many.zip", mimeType: "application/zip", content: zipSync({ "1.xml": YAHOO, "2.xml": YAHOO, "3.xml": YAHOO, "4.xml": YAHOO }) },
      { filename: "ok.xml", mimeType: "text/xml", content: YAHOO },
    ], limits);
    expect(read.refused).toEqual([
      "bomb.xml.gz: gzip file unpacks to more than the 1048576-byte limit",
      "bomb.zip: zip unpacks to more than the 1048576-byte limit",
      "many.zip: zip holds more than 3 XML files",
    ]);
    expect(read.reports.map((r) => r.orgName)).toEqual(["Yahoo"]);
  });

  it("stops a gzip whose trailer understates its size at the limit, whatever it declares", () => {
    const bomb = gzipSync(new Uint8Array(24 * 1024 * 1024));
    bomb.writeUInt32LE(1000, bomb.length - 4);
    const read = readAggregateReports([{ filename: "liar.xml.gz", mimeType: "application/gzip", content: bomb }]);
    expect(read).toEqual({ reports: [], refused: ["liar.xml.gz: gzip file unpacks to more than the 20971520-byte limit"] });
  });

  it("stops a zip entry whose headers understate its size at the limit, whatever they declare", () => {
    const liar = zipWithEntry("liar.xml", deflateRawSync(new Uint8Array(24 * 1024 * 1024)), 100);
    const read = readAggregateReports([{ filename: "liar.zip", mimeType: "application/zip", content: liar }]);
    expect(read).toEqual({ reports: [], refused: ["liar.zip: zip unpacks to more than the 20971520-byte limit"] });
  });

  it("refuses a truncated gzip or zip and an empty part", async () => {
    const gz = gzip(GOOGLE);
    const zipped = await zip({ "o.xml": OUTLOOK });
    const read = readAggregateReports([
      { filename: "cut.xml.gz", mimeType: "application/gzip", content: gz.subarray(0, gz.length / 2) },
      { filename: "cut.zip", mimeType: "application/zip", content: zipped.subarray(0, zipped.length / 2) },
      { filename: "empty.xml.gz", mimeType: "application/gzip", content: new Uint8Array(0) },
    ]);
    expect(read.reports).toEqual([]);
    expect(read.refused.map((r) => r.split(":")[0])).toEqual(["cut.xml.gz", "cut.zip", "empty.xml.gz"]);
  });

  it("counts records across a message's reports against the limit", () => {
    const read = readAggregateReports([
      { filename: "a.xml", mimeType: "text/xml", content: GOOGLE },
      { filename: "b.xml", mimeType: "text/xml", content: OUTLOOK },
    ], { maxXmlBytes: 1024 * 1024, maxRecords: 4, maxFiles: 10 });
    expect(read.reports.map((r) => r.orgName)).toEqual(["google.com"]);
    expect(read.refused).toEqual(["b.xml: report 0a1b2c3d4e5f40718293a4b5c6d7e8f9 has 3 records, over the 1 limit"]);
  });
});

/** A one-entry zip (deflate) whose headers declare `declaredSize` as the entry's uncompressed size. */
function zipWithEntry(name: string, deflated: Uint8Array, declaredSize: number): Uint8Array {
  const fileName = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(deflated.length, 18);
  local.writeUInt32LE(declaredSize, 22);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(deflated.length, 20);
  central.writeUInt32LE(declaredSize, 24);
  central.writeUInt16LE(fileName.length, 28);
  central.writeUInt32LE(0, 42);
  const centralOffset = local.length + fileName.length + deflated.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + fileName.length, 12);
  end.writeUInt32LE(centralOffset, 16);
  return Buffer.concat([local, fileName, Buffer.from(deflated), central, fileName, end]);
}
