//! A small unified line diff (longest common subsequence), enough to show why a generated file
//! is stale. Not a general diff tool: large, wholly different inputs fall back to
//! "all removed, all added".

use std::fmt::Write as _;

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Past this many cells the quadratic table is skipped.
const MAX_TABLE: usize = 4_000_000;
/// At most this many diff lines are printed.
const MAX_LINES: usize = 200;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Removed,
    Added,
}

/// A unified diff from `old` to `new`, with `---`/`+++` lines naming them; empty when equal.
pub fn line_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = edit_script(&a, &b);

    // Each op with its text and its 1-based line numbers in old and new.
    let mut rows = Vec::with_capacity(ops.len());
    let (mut i, mut j) = (0, 0);
    for op in ops {
        match op {
            Op::Same => {
                rows.push((op, a[i], i, j));
                i += 1;
                j += 1;
            }
            Op::Removed => {
                rows.push((op, a[i], i, j));
                i += 1;
            }
            Op::Added => {
                rows.push((op, b[j], i, j));
                j += 1;
            }
        }
    }

    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let mut printed = 0;
    let mut start = 0;
    while let Some(first) = rows[start..].iter().position(|r| r.0 != Op::Same) {
        // A hunk: from CONTEXT lines before the first change to CONTEXT lines after the last
        // change that is at most 2 * CONTEXT unchanged lines from the next.
        let first = start + first;
        let from = first.saturating_sub(CONTEXT).max(start);
        let mut last = first;
        let mut k = first;
        while k < rows.len() {
            if rows[k].0 != Op::Same {
                last = k;
            } else if k - last > 2 * CONTEXT {
                break;
            }
            k += 1;
        }
        let to = (last + CONTEXT + 1).min(rows.len());
        let hunk = &rows[from..to];
        let old_count = hunk.iter().filter(|r| r.0 != Op::Added).count();
        let new_count = hunk.iter().filter(|r| r.0 != Op::Removed).count();
        let _ = writeln!(
            out,
            "@@ -{},{old_count} +{},{new_count} @@",
            hunk[0].2 + usize::from(old_count > 0),
            hunk[0].3 + usize::from(new_count > 0),
        );
        for (op, text, _, _) in hunk {
            if printed == MAX_LINES {
                let _ = writeln!(out, "... (diff cut at {MAX_LINES} lines)");
                return out;
            }
            let sign = match op {
                Op::Same => ' ',
                Op::Removed => '-',
                Op::Added => '+',
            };
            let _ = writeln!(out, "{sign}{text}");
            printed += 1;
        }
        start = to;
    }
    if !old.is_empty() && !new.is_empty() && old.ends_with('\n') != new.ends_with('\n') {
        out.push_str("(the files differ in the newline at the end)\n");
    }
    out
}

/// The edit script from `a` to `b`: common prefix and suffix kept, the middle by LCS.
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a_mid, b_mid) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);

    let mut ops = vec![Op::Same; prefix];
    if a_mid.len().saturating_mul(b_mid.len()) > MAX_TABLE {
        ops.extend(std::iter::repeat_n(Op::Removed, a_mid.len()));
        ops.extend(std::iter::repeat_n(Op::Added, b_mid.len()));
    } else {
        ops.extend(lcs_script(a_mid, b_mid));
    }
    ops.extend(std::iter::repeat_n(Op::Same, suffix));
    ops
}

fn lcs_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    // table[i][j]: length of the LCS of a[i..] and b[j..].
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if a[i] == b[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let mut ops = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Same);
            i += 1;
            j += 1;
        } else if table[at(i + 1, j)] >= table[at(i, j + 1)] {
            ops.push(Op::Removed);
            i += 1;
        } else {
            ops.push(Op::Added);
            j += 1;
        }
    }
    ops.extend(std::iter::repeat_n(Op::Removed, n - i));
    ops.extend(std::iter::repeat_n(Op::Added, m - j));
    ops
}

#[cfg(test)]
mod tests {
    use super::line_diff;

    #[test]
    fn equal_inputs_have_no_diff() {
        assert_eq!(line_diff("a\nb\n", "a\nb\n", "old", "new"), "");
    }

    #[test]
    fn one_changed_line_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            line_diff(old, new, "old", "new"),
            "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn distant_changes_make_two_hunks() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "two\n").replace("l19\n", "nineteen\n");
        let diff = line_diff(&old, &new, "old", "new");
        assert!(
            diff.contains("@@ -1,5 +1,5 @@\n l1\n-l2\n+two\n l3\n"),
            "{diff}"
        );
        assert!(diff.contains("@@ -16,5 +16,5 @@\n l16\n"), "{diff}");
        assert!(diff.contains("-l19\n+nineteen\n l20\n"), "{diff}");
    }

    #[test]
    fn missing_file_is_all_added() {
        assert_eq!(
            line_diff("", "a\nb\n", "old", "new"),
            "--- old\n+++ new\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        );
    }

    #[test]
    fn insertions_and_deletions_align() {
        let diff = line_diff("a\nb\nc\n", "a\nc\nd\n", "old", "new");
        assert_eq!(diff, "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n c\n+d\n");
    }
}
