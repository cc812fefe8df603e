//! Side-by-side line diff of two pages' text (near-duplicate and soft-404
//! evidence), with a time budget: past it the diff is coarser, never slower.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use similar::{capture_diff_slices_deadline, Algorithm, DiffOp};

/// Longest a diff may take before it settles for a coarser answer.
const DIFF_BUDGET: Duration = Duration::from_millis(500);

/// Which side(s) a diff row's text is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DiffSide {
    /// The same line on both sides.
    Same,
    /// Differs: a line on the left replaced by one on the right (either may be missing).
    Changed,
}

/// One row of a side-by-side diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffRow {
    /// Same or changed.
    pub side: DiffSide,
    /// The left page's line, if it has one in this row.
    pub left: Option<String>,
    /// The right page's line, if it has one in this row.
    pub right: Option<String>,
}

/// The rows of a side-by-side diff of `left` and `right`, line by line.
pub fn side_by_side(left: &[String], right: &[String]) -> Vec<DiffRow> {
    let deadline = std::time::Instant::now() + DIFF_BUDGET;
    let ops = capture_diff_slices_deadline(Algorithm::Myers, left, right, Some(deadline));
    let mut rows = Vec::new();
    for op in ops {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => rows.extend((0..len).map(|i| DiffRow {
                side: DiffSide::Same,
                left: Some(left[old_index + i].clone()),
                right: Some(right[new_index + i].clone()),
            })),
            other => {
                let (old, new) = (other.old_range(), other.new_range());
                let height = old.len().max(new.len());
                rows.extend((0..height).map(|i| DiffRow {
                    side: DiffSide::Changed,
                    left: left.get(old.start + i).filter(|_| i < old.len()).cloned(),
                    right: right.get(new.start + i).filter(|_| i < new.len()).cloned(),
                }));
            }
        }
    }
    rows
}
