import type { Readable } from "node:stream";
import yauzl from "yauzl";
import { baseName } from "./files.js";
import { ImportFileError } from "./records.js";

export interface ZipEntry {
  /** The entry's path inside the archive. */
  name: string;
  /** Its content, inflated as it is read. */
  open(): Promise<Readable>;
}

/**
 * The files of a zip archive one at a time, each streamed (an audience export of millions of
 * members is never held in memory). The next entry is read once the caller asks for it.
 */
export async function* zipEntries(file: string): AsyncGenerator<ZipEntry> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false }, (err, z) => (err || !z ? reject(new ImportFileError(`${baseName(file)} is not a readable zip archive: ${err?.message ?? "no content"}`)) : resolve(z)));
  });
  try {
    for (;;) {
      const entry = await new Promise<yauzl.Entry | undefined>((resolve, reject) => {
        const onEntry = (e: yauzl.Entry) => { cleanup(); resolve(e); };
        const onEnd = () => { cleanup(); resolve(undefined); };
        const onError = (err: Error) => { cleanup(); reject(new ImportFileError(`${baseName(file)}: ${err.message}`)); };
        const cleanup = () => { zip.off("entry", onEntry); zip.off("end", onEnd); zip.off("error", onError); };
        zip.on("entry", onEntry).on("end", onEnd).on("error", onError);
        zip.readEntry();
      });
      if (!entry) return;
      if (entry.fileName.endsWith("/")) continue;
      yield {
        name: entry.fileName,
        open: () => new Promise<Readable>((resolve, reject) => {
          zip.openReadStream(entry, (err, stream) => (err || !stream ? reject(new ImportFileError(`${baseName(file)}: ${entry.fileName}: ${err?.message ?? "unreadable"}`)) : resolve(stream)));
        }),
      };
    }
  } finally {
    zip.close();
  }
}
