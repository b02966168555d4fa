/**
 * The compiler's output before it becomes the content contract (compiled.ts): literal
 * text, merge variables (as they are, or percent-encoded in a URL query), tracked links
 * by index, and the open pixel.
 */
export type Piece =
  | { lit: string }
  | { variable: string }
  | { urlVariable: string }
  | { link: number }
  | { pixel: true };

/** push(...items) passes items as call arguments and overflows the stack past ~100k. */
export function append<T>(target: T[], items: readonly T[]): void {
  for (let i = 0; i < items.length; i++) target.push(items[i]);
}
