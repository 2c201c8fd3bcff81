//! The text kube-apiserver puts in refusals that show what an update would change: a unified
//! diff (three lines of context, no file header) of the two values as indented JSON, one space
//! per level, as kube's `diff.Diff` prints them.
//!
//! Invariants: equal values give an empty diff; every line of either value appears in the
//! output at most once, prefixed `' '`, `'-'` or `'+'`, and the hunks' ranges count them. Memory
//! stays linear in the input: lines common to both ends are matched first, and a middle too
//! large to align line by line is shown as replaced whole.

use serde::Serialize;
use serde_json::Value;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The largest middle (lines of one side times lines of the other) aligned line by line.
const ALIGNED_CELLS: usize = 1 << 20;

/// The unified diff of `a` against `b`.
pub(crate) fn of_values(a: &Value, b: &Value) -> String {
    of_lines(&lines(a), &lines(b))
}

/// A value as indented JSON lines, each ending with a newline.
fn lines(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b" "));
    let _ = v.serialize(&mut ser);
    String::from_utf8_lossy(&out).lines().map(|l| format!("{l}\n")).collect()
}

/// One run of lines: equal (`' '`), removed from `a`, added from `b`, or replaced.
#[derive(Clone, Copy)]
struct Op {
    tag: char,
    a: (usize, usize),
    b: (usize, usize),
}

/// The unified diff of the lines `a` against the lines `b`, each ending with a newline.
pub(crate) fn of_lines(a: &[String], b: &[String]) -> String {
    let mut out = String::new();
    for group in groups(ops(a, b)) {
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push_str(&format!("@@ -{} +{} @@\n", range(first.a.0, last.a.1), range(first.b.0, last.b.1)));
        for op in group {
            if op.tag == 'e' {
                a[op.a.0..op.a.1].iter().for_each(|l| out.push_str(&format!(" {l}")));
                continue;
            }
            if op.tag == 'r' || op.tag == 'd' {
                a[op.a.0..op.a.1].iter().for_each(|l| out.push_str(&format!("-{l}")));
            }
            if op.tag == 'r' || op.tag == 'i' {
                b[op.b.0..op.b.1].iter().for_each(|l| out.push_str(&format!("+{l}")));
            }
        }
    }
    out
}

/// A hunk's range: its first line (1-based) and its length, the length left out when 1.
fn range(start: usize, stop: usize) -> String {
    match stop - start {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        n => format!("{},{n}", start + 1),
    }
}

/// The runs that turn `a` into `b`: the lines both start and end with, and between them the
/// longest common subsequence of lines.
fn ops(a: &[String], b: &[String]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (n, m) = (a.len() - head - tail, b.len() - head - tail);
    let mut out = Vec::new();
    if head > 0 {
        out.push(Op { tag: 'e', a: (0, head), b: (0, head) });
    }
    let shift = |op: Op| Op { tag: op.tag, a: (op.a.0 + head, op.a.1 + head), b: (op.b.0 + head, op.b.1 + head) };
    let middle = (&a[head..head + n], &b[head..head + m]);
    if n.saturating_mul(m) <= ALIGNED_CELLS {
        out.extend(aligned(middle.0, middle.1).into_iter().map(shift));
    } else {
        out.push(Op { tag: 'r', a: (head, head + n), b: (head, head + m) });
    }
    if tail > 0 {
        out.push(Op { tag: 'e', a: (a.len() - tail, a.len()), b: (b.len() - tail, b.len()) });
    }
    out
}

/// The runs that turn `a` into `b`, from their longest common subsequence of lines.
fn aligned(a: &[String], b: &[String]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut out: Vec<Op> = Vec::new();
    let (mut i, mut j) = (0, 0);
    let (mut gap_a, mut gap_b) = (0, 0);
    let flush_gap = |out: &mut Vec<Op>, i: usize, j: usize, ga: usize, gb: usize| {
        let tag = match (i > ga, j > gb) {
            (true, true) => 'r',
            (true, false) => 'd',
            (false, true) => 'i',
            (false, false) => return,
        };
        out.push(Op { tag, a: (ga, i), b: (gb, j) });
    };
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            flush_gap(&mut out, i, j, gap_a, gap_b);
            match out.last_mut() {
                Some(op) if op.tag == 'e' && op.a.1 == i && op.b.1 == j => {
                    op.a.1 += 1;
                    op.b.1 += 1;
                }
                _ => out.push(Op { tag: 'e', a: (i, i + 1), b: (j, j + 1) }),
            }
            i += 1;
            j += 1;
            (gap_a, gap_b) = (i, j);
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            j += 1;
        } else {
            i += 1;
        }
    }
    flush_gap(&mut out, i, j, gap_a, gap_b);
    out
}

/// The runs grouped into hunks, each with at most [`CONTEXT`] equal lines on either side.
fn groups(mut codes: Vec<Op>) -> Vec<Vec<Op>> {
    if codes.is_empty() || (codes.len() == 1 && codes[0].tag == 'e') {
        return Vec::new();
    }
    if let Some(first) = codes.first_mut().filter(|c| c.tag == 'e') {
        first.a.0 = first.a.0.max(first.a.1.saturating_sub(CONTEXT));
        first.b.0 = first.b.0.max(first.b.1.saturating_sub(CONTEXT));
    }
    if let Some(last) = codes.last_mut().filter(|c| c.tag == 'e') {
        last.a.1 = last.a.1.min(last.a.0 + CONTEXT);
        last.b.1 = last.b.1.min(last.b.0 + CONTEXT);
    }
    let mut out = Vec::new();
    let mut group = Vec::new();
    for mut op in codes {
        if op.tag == 'e' && op.a.1 - op.a.0 > 2 * CONTEXT {
            group.push(Op { tag: 'e', a: (op.a.0, op.a.0 + CONTEXT), b: (op.b.0, op.b.0 + CONTEXT) });
            out.push(std::mem::take(&mut group));
            op.a.0 = op.a.1 - CONTEXT;
            op.b.0 = op.b.1 - CONTEXT;
        }
        group.push(op);
    }
    if !(group.is_empty() || (group.len() == 1 && group[0].tag == 'e')) {
        out.push(group);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_changed_member_is_one_hunk_with_its_context() {
        let a = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8});
        let mut b = a.clone();
        b["e"] = json!(50);
        assert_eq!(
            of_values(&a, &b),
            "@@ -3,7 +3,7 @@\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n- \"e\": 5,\n+ \"e\": 50,\n  \"f\": 6,\n  \"g\": 7,\n  \"h\": 8\n"
        );
        assert_eq!(of_values(&a, &a), "");
    }

    #[test]
    fn distant_changes_are_separate_hunks_and_additions_count_from_the_line_before() {
        let a: Vec<String> = (0..20).map(|i| format!("{i}\n")).collect();
        let mut b = a.clone();
        b[1] = "one\n".into();
        b.insert(15, "new\n".into());
        assert_eq!(
            of_lines(&a, &b),
            "@@ -1,5 +1,5 @@\n 0\n-1\n+one\n 2\n 3\n 4\n@@ -13,6 +13,7 @@\n 12\n 13\n 14\n+new\n 15\n 16\n 17\n"
        );
        assert_eq!(of_lines(&[], &["x\n".to_string()]), "@@ -0,0 +1 @@\n+x\n");
    }

    #[test]
    fn a_middle_too_large_to_align_is_replaced_whole() {
        let a: Vec<String> = (0..3000).map(|i| format!("{i}\n")).collect();
        let b: Vec<String> =
            (0..3000).map(|i| format!("{}\n", if (1..2999).contains(&i) { i * 7 } else { i })).collect();
        let diff = of_lines(&a, &b);
        assert!(diff.starts_with("@@ -1,3000 +1,3000 @@\n 0\n-1\n-2\n"), "{}", &diff[..60]);
        assert_eq!(diff.lines().filter(|l| l.starts_with('-')).count(), 2998);
        assert!(diff.ends_with("+20986\n 2999\n"));
    }
}
