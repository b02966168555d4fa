import cliProgress from "cli-progress";

/**
 * A progress bar on stderr when it is a terminal (CliContext.interactive), else undefined: a
 * bar redrawn into a log file or a pipe is noise, so callers print a line per step instead.
 */
export function progressBar(interactive: boolean, format: string): cliProgress.SingleBar | undefined {
  if (!interactive) return undefined;
  return new cliProgress.SingleBar({ format, stream: process.stderr, hideCursor: true }, cliProgress.Presets.shades_classic);
}
