/** Lines of context around each change in a unified diff. */
const CONTEXT = 3;

/**
 * A unified diff of two texts, line by line (the hunks of `diff -u`, headers left to the
 * caller): a longest common subsequence by dynamic programming, as resources rendered to JSON
 * are a few hundred lines at most. Empty when the texts are equal.
 */
export function unifiedDiff(before: string, after: string): string {
  const a = linesOf(before);
  const b = linesOf(after);
  // common[i][j]: the longest common subsequence of a[i..] and b[j..].
  const common = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i]![j] = a[i] === b[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
    }
  }
  const edits: Edit[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      edits.push({ op: ' ', line: a[i++]! });
      j++;
    }
    // Removals before additions, as `diff -u` prints a changed line.
    else if (i < a.length && (j === b.length || common[i + 1]![j]! >= common[i]![j + 1]!)) edits.push({ op: '-', line: a[i++]! });
    else edits.push({ op: '+', line: b[j++]! });
  }
  return hunksOf(edits);
}

interface Edit {
  readonly op: ' ' | '-' | '+';
  readonly line: string;
}

function hunksOf(edits: readonly Edit[]): string {
  const changed = edits.map((edit, index) => (edit.op === ' ' ? -1 : index)).filter((index) => index >= 0);
  if (changed.length === 0) return '';
  let out = '';
  for (let k = 0; k < changed.length; ) {
    const start = Math.max(0, changed[k]! - CONTEXT);
    let end = changed[k]! + CONTEXT + 1;
    // Changes closer than twice the context share a hunk.
    while (k + 1 < changed.length && changed[k + 1]! - CONTEXT <= end) end = changed[++k]! + CONTEXT + 1;
    k++;
    const hunk = edits.slice(start, Math.min(end, edits.length));
    const fromStart = lineBefore(edits, start, 0);
    const toStart = lineBefore(edits, start, 1);
    const fromCount = hunk.filter((edit) => edit.op !== '+').length;
    const toCount = hunk.filter((edit) => edit.op !== '-').length;
    out += `@@ -${fromStart + (fromCount > 0 ? 1 : 0)},${fromCount} +${toStart + (toCount > 0 ? 1 : 0)},${toCount} @@\n`;
    for (const edit of hunk) out += `${edit.op}${edit.line}\n`;
  }
  return out;
}

/** How many lines of side `side` (0: before, 1: after) come before edit `index`. */
function lineBefore(edits: readonly Edit[], index: number, side: 0 | 1): number {
  let count = 0;
  for (let k = 0; k < index; k++) if (edits[k]!.op === ' ' || edits[k]!.op === (side === 0 ? '-' : '+')) count++;
  return count;
}

function linesOf(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}
