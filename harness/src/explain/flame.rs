//! Flame graphs of a profile (SVG, by inferno): one per build, and a differential one of both.
//!
//! callgrind keeps each function's own cost and the inclusive cost of each caller → callee
//! edge, not whole stacks. The stacks are rebuilt from the roots down: a callee's subtree is
//! split over its callers in proportion to the cost of each call, so every instruction is drawn
//! once and the widths add up to the total (gungraun instead repeats a callee's whole subtree
//! under every caller, which counts a shared callee more than once).

use crate::callgrind::profile::Profile;
use std::collections::{BTreeMap, BTreeSet};

/// Deepest stack drawn; deeper calls are folded into the frame that made them.
const MAX_DEPTH: usize = 64;
/// Subtrees smaller than this share of the total are folded into their caller.
const SMALLEST_SHARE: f64 = 1e-5;

/// The profile's instructions as folded stacks (`a;b;c count`), one line per stack.
pub(crate) fn folded(profile: &Profile) -> String {
    let event = 0;
    let total = profile.total(event) as f64;
    let inclusive = profile.inclusive(event);
    let mut callees: BTreeMap<&str, Vec<(&str, f64)>> = BTreeMap::new();
    let mut called: BTreeSet<&str> = BTreeSet::new();
    for ((caller, callee), cost) in &profile.calls {
        if caller != callee {
            callees.entry(caller).or_default().push((callee, cost.first().copied().unwrap_or(0) as f64));
            called.insert(callee);
        }
    }
    let own = |f: &str| profile.own.get(f).and_then(|c| c.first()).copied().unwrap_or(0) as f64;
    let mut walk = Walk {
        callees,
        inclusive,
        own: &own,
        smallest: total * SMALLEST_SHARE,
        lines: BTreeMap::new(),
        drawn: BTreeMap::new(),
    };
    let roots: Vec<&str> = profile.own.keys().map(String::as_str).filter(|f| !called.contains(f)).collect();
    for root in roots {
        walk.emit(root, 1.0, &mut vec![]);
    }
    // What the walk did not reach (a function called only from a cycle) keeps its own frame.
    for f in profile.own.keys() {
        let left = own(f) - walk.drawn.get(f.as_str()).copied().unwrap_or(0.0);
        if left >= 0.5 {
            *walk.lines.entry(frame(f)).or_default() += left;
        }
    }
    walk.lines
        .into_iter()
        .filter(|(_, n)| n.round() >= 1.0)
        .map(|(stack, n)| format!("{stack} {}\n", n.round() as u64))
        .collect()
}

/// A frame's name in a folded stack (`;` separates frames).
fn frame(name: &str) -> String {
    name.replace(';', ":")
}

/// The walk down the call graph: what it drew so far.
struct Walk<'a> {
    callees: BTreeMap<&'a str, Vec<(&'a str, f64)>>,
    inclusive: BTreeMap<String, u64>,
    own: &'a dyn Fn(&str) -> f64,
    smallest: f64,
    lines: BTreeMap<String, f64>,
    drawn: BTreeMap<&'a str, f64>,
}

impl<'a> Walk<'a> {
    /// Draws `f`'s subtree at `scale` of its inclusive cost under `stack`.
    fn emit(&mut self, f: &'a str, scale: f64, stack: &mut Vec<&'a str>) {
        stack.push(f);
        let mut here = (self.own)(f) * scale;
        *self.drawn.entry(f).or_default() += here;
        for (callee, cost) in self.callees.get(f).cloned().unwrap_or_default() {
            let cost = cost * scale;
            let callee_inclusive = self.inclusive.get(callee).copied().unwrap_or(0) as f64;
            if stack.contains(&callee) || stack.len() >= MAX_DEPTH || cost < self.smallest || callee_inclusive <= 0.0 {
                here += cost;
            } else {
                self.emit(callee, cost / callee_inclusive, stack);
            }
        }
        let key = stack.iter().map(|f| frame(f)).collect::<Vec<_>>().join(";");
        *self.lines.entry(key).or_default() += here;
        stack.pop();
    }
}

/// A flame graph (SVG) of folded stacks, titled; two counts per line make it differential.
pub(crate) fn svg(folded: &str, title: &str, subtitle: &str) -> anyhow::Result<Vec<u8>> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.subtitle = Some(subtitle.to_string());
    options.count_name = "instructions".into();
    options.hash = true;
    let mut out = vec![];
    let lines = folded.lines().filter(|l| !l.trim().is_empty());
    inferno::flamegraph::from_lines(&mut options, lines, &mut out)
        .map_err(|e| anyhow::anyhow!("cannot draw the flame graph '{title}': {e}"))?;
    Ok(out)
}

/// The folded stacks of both builds as one differential input (two counts per stack).
pub(crate) fn differential(base: &str, new: &str) -> anyhow::Result<String> {
    let mut out = vec![];
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        base.as_bytes(),
        new.as_bytes(),
        &mut out,
    )
    .map_err(|e| anyhow::anyhow!("cannot fold the differential flame graph: {e}"))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind::profile::{parse, tests::DUMP};

    #[test]
    fn stacks_draw_every_instruction_once() {
        let text = folded(&parse(DUMP).unwrap());
        let sum: u64 = text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
        assert_eq!(sum, 122, "{text}");
        assert!(text.contains("main;app::work 105\n"), "{text}");
        assert!(text.contains("main;free 7\n"), "{text}");
        assert!(text.contains("main 10\n"), "{text}");
    }

    #[test]
    fn flame_graphs_are_svg_and_the_differential_one_has_both_counts() {
        let base = folded(&parse(DUMP).unwrap());
        let new = base.replace("main;app::work 105", "main;app::work 140");
        let both = differential(&base, &new).unwrap();
        assert!(both.contains("main;app::work 105 140"), "{both}");
        let picture = String::from_utf8(svg(&both, "diff", "per op").unwrap()).unwrap();
        assert!(picture.starts_with("<?xml") && picture.contains("<svg") && picture.contains("app::work"));
    }
}
