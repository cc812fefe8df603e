//! Path-shape traps: repeated segments (`/a/b/a/b/a/b`) and paths that grow
//! deeper hop after hop.

use crate::engine::url_norm::UrlParts;

use super::{anchored_rule, hash_str, path_segments, segments, Detection, GenMap, LinkParent};
use crate::engine::config::TrapConfig;
use crate::engine::telemetry::TrapKind;

/// Longest repeated unit looked for, in segments.
const MAX_UNIT: usize = 4;
/// Growing hops in a row before a too-deep path counts as a trap: one deep
/// link from a shallow page is a site's choice, a chain is a generator.
pub const MIN_GROWTH_HOPS: u32 = 3;

/// A run of `max_segment_repeats` identical units (1..=4 segments) in a row.
pub fn repeated_segments(cfg: &TrapConfig, host: &str, url: &impl UrlParts) -> Option<Detection> {
    let reps = cfg.max_segment_repeats;
    // Fewer slashes than repeats: no run, and no segments collected (most links).
    if reps < 2 || url.path().bytes().filter(|&b| b == b'/').count() < reps {
        return None;
    }
    let segs = segments(url);
    for start in 0..segs.len() {
        for unit in 1..=MAX_UNIT {
            if start + unit * reps > segs.len() {
                break;
            }
            let first = &segs[start..start + unit];
            let repeated = (1..reps).all(|r| {
                let at = start + r * unit;
                &segs[at..at + unit] == first
            });
            if repeated {
                // Deep paths in the subtree where the repetition begins: a
                // generator produces endless variants (a/a/a, a/b/a/b…), so a
                // rule for one unit would chase them alert by alert. The depth
                // floor keeps the subtree's shallow, real pages out.
                let prefix = format!("/{}", prefix_dir(&segs[..=start]));
                let deeper = unit * (reps - 1);
                let tail = format!("(?:[^/?#]+/){{{}}}[^/?#]", deeper - 1);
                return Some(Detection {
                    host: host.to_string(),
                    kind: TrapKind::RepeatedSegments,
                    evidence_count: 1,
                    samples: vec![url.as_str().to_string()],
                    rule: anchored_rule(url, host, &prefix, &tail),
                });
            }
        }
    }
    None
}

/// `a/b/` for `[a, b]`, empty for none.
fn prefix_dir(segs: &[&str]) -> String {
    segs.iter().map(|s| format!("{s}/")).collect()
}

/// Per host: how many growing hops led to a path.
#[derive(Default)]
pub struct DepthState {
    runs: Option<GenMap<u64, u32>>,
}

impl DepthState {
    pub fn on_link(
        &mut self,
        cfg: &TrapConfig,
        host: &str,
        parent: &LinkParent,
        child: &impl UrlParts,
        memory: usize,
    ) -> Option<Detection> {
        let child_depth = path_segments(child.path()).count();
        if child_depth <= parent.depth {
            return None;
        }
        let runs = GenMap::capped(&mut self.runs, memory);
        let run = runs.get(&parent.path_hash).copied().unwrap_or(0) + 1;
        let child_key = hash_str(child.path());
        match runs.get(&child_key) {
            Some(old) if *old >= run => {}
            _ => runs.insert(child_key, run),
        }
        if child_depth <= cfg.max_path_depth || run < MIN_GROWTH_HOPS {
            return None;
        }
        // Under the chain's common first segment when there is one.
        let depth = cfg.max_path_depth.max(1);
        let firsts = (
            path_segments(parent.url.path()).next(),
            path_segments(child.path()).next(),
        );
        let (prefix, tail) = match firsts {
            (Some(p), Some(c)) if p == c => (
                format!("/{c}/"),
                format!("(?:[^/?#]+/){{{}}}[^/?#]", depth - 1),
            ),
            _ => ("/".to_string(), format!("(?:[^/?#]+/){{{depth}}}[^/?#]")),
        };
        Some(Detection {
            host: host.to_string(),
            kind: TrapKind::DepthGrowth,
            evidence_count: u64::from(run),
            samples: vec![parent.url.to_string(), child.as_str().to_string()],
            rule: anchored_rule(child, host, &prefix, &tail),
        })
    }
}
