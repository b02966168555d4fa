/**
 * Test helpers for DMARC aggregate reports: the fixture reports under fixtures/dmarc (written
 * from RFC 7489 Appendix C's format), packed as reporters send them (gzip by node:zlib, zip
 * by yazl: other code than the fflate that unpacks them), in messages as reporters mail them.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import MailComposer from "nodemailer/lib/mail-composer";
import yazl from "yazl";

export const DMARC_FIXTURES = path.join(import.meta.dirname, "fixtures", "dmarc");

/** google-multi-record.xml (3 records, 2026-11-20), outlook-zip.xml (3 records, 2026-11-21), yahoo-single-record.xml (1, 2026-11-22). */
export const dmarcFixture = (name: string): Buffer => readFileSync(path.join(DMARC_FIXTURES, name));

export const gzip = (data: Uint8Array): Buffer => gzipSync(data);

/** A zip of the files as Java's ZipOutputStream writes them (yazl: deflated, sizes in data descriptors). */
export async function zip(files: Record<string, Uint8Array>): Promise<Buffer> {
  const archive = new yazl.ZipFile();
  for (const [name, data] of Object.entries(files)) archive.addBuffer(Buffer.from(data), name);
  archive.end();
  const chunks: Buffer[] = [];
  for await (const chunk of archive.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface ReportMail {
  to: string;
  from?: string;
  subject?: string;
  attachments?: { filename: string; contentType: string; content: Uint8Array }[];
}

/** A report mail as reporters send one: a short text and the report attached. */
export async function reportMessage(mail: ReportMail): Promise<Buffer> {
  const composer = new MailComposer({
    from: mail.from ?? "noreply-dmarc-support@google.com",
    to: mail.to,
    subject: mail.subject ?? "Report domain: acme.example Submitter: google.com Report-ID: <17951328009876543210>",
    text: "This is an aggregate report from google.com.",
    attachments: (mail.attachments ?? []).map((a) => ({ filename: a.filename, contentType: a.contentType, content: Buffer.from(a.content) })),
  });
  return composer.compile().build();
}

/** A report mail whose whole body is the gzip file (no multipart), as some reporters send it. */
export function gzipBodyMessage(to: string, file: Uint8Array, filename = "report.xml.gz"): Buffer {
  const body = Buffer.from(file).toString("base64").replace(/.{76}/g, "$&\r\n");
  return Buffer.from(
    [
      "From: dmarc-reports@reporter.example",
      `To: ${to}`,
      `Subject: Report Domain: acme.example Submitter: reporter.example`,
      "Date: Sun, 22 Nov 2026 06:00:00 +0000",
      "Message-ID: <gzip-body-report@reporter.example>",
      "MIME-Version: 1.0",
      `Content-Type: application/gzip; name="${filename}"`,
      `Content-Disposition: attachment; filename="${filename}"`,
      "Content-Transfer-Encoding: base64",
      "",
      body,
      "",
    ].join("\r\n"),
  );
}
