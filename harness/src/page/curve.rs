//! The latency–throughput curve of the docs page: every case run open-loop at several rates
//! (`harness run --rate 10%,50%,80%,95%`, shares of its own closed-loop throughput measured first
//! in the same run, or ops per second), one chart and one table per case: p50, p99 and p99.9 of
//! the corrected latency against the achieved rate, where the tail bends up (the knee).

use super::File;
use super::charts::{Line, latency_curve};
use crate::format::{nanos, si};
use crate::report::{Benchmark, CaseId};

/// One rate of a case's curve.
#[derive(Debug, Clone)]
struct Point<'a> {
    /// The case at that rate.
    case: &'a Benchmark,
    /// Mean achieved ops/s over the forks that kept the rate (`None`: none did).
    achieved: Option<f64>,
    /// Corrected p50, p99 and p99.9, nanoseconds, over those forks.
    percentiles: Option<[f64; 3]>,
}

/// A case's curve: its identity without a rate, its closed-loop ops/s where this run measured
/// it, and its rates in rising order.
#[derive(Debug, Clone)]
struct Curve<'a> {
    id: CaseId,
    closed: Option<f64>,
    points: Vec<Point<'a>>,
}

/// The curves of the open-loop cases among `cases`, each with two or more rates or a closed-loop run.
fn curves<'a>(cases: &[&'a Benchmark]) -> Vec<Curve<'a>> {
    let mut out: Vec<Curve<'a>> = vec![];
    for b in cases.iter().copied().filter(|b| b.rate.is_some()) {
        let id = b.id().with_rate(None);
        let summary = b.open_loop.as_ref();
        let corrected = summary.and_then(|o| o.corrected.as_ref());
        let at = |k| corrected.and_then(|c| c.at(k)).map(|v| v as f64);
        let point = Point {
            case: b,
            achieved: summary.and_then(|o| o.achieved_per_sec),
            percentiles: at("p50").zip(at("p99")).zip(at("p99.9")).map(|((a, b), c)| [a, b, c]),
        };
        match out.iter_mut().find(|c| c.id == id) {
            Some(c) => c.points.push(point),
            None => {
                let closed = cases.iter().find(|c| c.id() == id).and_then(|c| c.score.as_ref()).map(|s| s.mean);
                out.push(Curve { id, closed, points: vec![point] });
            }
        }
    }
    for c in &mut out {
        c.points.sort_by_key(|p| p.case.rate.map(|r| r.per_sec));
    }
    out.retain(|c| c.points.len() >= 2 || c.closed.is_some());
    out
}

/// The three lines of a curve, in microseconds, over the rates whose forks kept them.
fn lines(c: &Curve<'_>) -> Vec<Line> {
    ["p50", "p99", "p99.9"]
        .iter()
        .enumerate()
        .map(|(i, name)| Line {
            name: format!("{name} (corrected)"),
            points: c.points.iter().filter_map(|p| Some((p.achieved?, p.percentiles?[i] / 1e3))).collect(),
        })
        .collect()
}

/// The table of a curve: one row per rate.
fn table(c: &Curve<'_>) -> String {
    let mut out = String::from(
        "| rate | of closed loop | achieved ops/s | p50 | p99 | p99.9 | uncorrected p99 | lag p99 | forks kept |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in &c.points {
        let o = p.case.open_loop.as_ref();
        let rate = p.case.rate.map_or("-".into(), |r| format!("{} {}", r.arrivals.as_str(), si(r.per_sec as f64)));
        let share = match (p.case.rate_share_pct, c.closed, p.case.rate) {
            (Some(pct), _, _) => format!("{pct}%"),
            (None, Some(closed), Some(r)) => format!("{:.0}%", 100.0 * r.per_sec as f64 / closed),
            _ => "-".into(),
        };
        let ns = |v: Option<f64>| v.map_or("-".into(), nanos);
        let pick = |i: usize| ns(p.percentiles.map(|q| q[i]));
        let other =
            |f: fn(&crate::report::open_loop::OpenLoopSummary) -> Option<u64>| ns(o.and_then(f).map(|v| v as f64));
        let kept = o.map_or("-".into(), |o| format!("{} of {}", o.forks_kept, o.forks_kept + o.forks_missed));
        out.push_str(&format!(
            "| {rate}/s | {share} | {} | {} | {} | {} | {} | {} | {kept} |\n",
            p.achieved.map_or("did not keep the rate".into(), si),
            pick(0),
            pick(1),
            pick(2),
            other(|o| o.uncorrected.as_ref()?.at("p99")),
            other(|o| o.lag.as_ref()?.at("p99")),
        ));
    }
    out
}

/// The curve section of group `group`: a chart and a table per case; empty without open-loop cases.
pub(crate) fn section(group: &str, cases: &[&Benchmark]) -> anyhow::Result<(String, Vec<File>)> {
    let (mut page, mut files) = (String::new(), vec![]);
    for (i, c) in curves(cases).iter().enumerate() {
        let file = format!("{group}-latency-{}.svg", i + 1);
        let title = format!("{}: latency against load", c.id);
        files.push((file.clone(), latency_curve(&title, c.closed, &lines(c))?));
        page.push_str(&format!("### {} at a rate\n\n![{title}]({file})\n\n", c.id));
        page.push_str("Open loop (`--rate`): each op timed from its intended start, so the queue behind a slow op counts; a rate whose forks did not keep it has no point. The dashed line is the case's closed-loop throughput in the same run.\n\n");
        page.push_str(&table(c));
        page.push('\n');
    }
    Ok((page, files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::{Arrivals, Rate};
    use crate::report::open_loop::{OpenLoopSummary, Percentiles};

    fn at(per_sec: u64, p99_us: u64, kept: bool) -> Benchmark {
        let mut b = crate::compare::fixtures::timed("probe/fixed_service", &[&[per_sec as f64]]);
        let rate = Rate { per_sec, arrivals: Arrivals::Poisson };
        b.rate = Some(rate);
        let p = |v: u64| Percentiles {
            count: 100,
            mean: v as f64,
            percentiles: [("p50", 100_000), ("p99", v), ("p99.9", v * 2)].map(|(k, v)| (k.to_string(), v)).into(),
            max: v * 3,
        };
        b.open_loop = Some(OpenLoopSummary {
            rate,
            forks_kept: u32::from(kept),
            forks_missed: u32::from(!kept),
            achieved_per_sec: kept.then_some(per_sec as f64),
            corrected: kept.then(|| p(p99_us * 1000)),
            uncorrected: kept.then(|| p(100_000)),
            lag: kept.then(|| p(1_000)),
        });
        b
    }

    #[test]
    fn each_case_gets_its_rates_in_order_with_its_closed_loop_throughput() {
        let closed = crate::compare::fixtures::timed("probe/fixed_service", &[&[9000.0]]);
        let (slow, fast, over) = (at(5000, 300, true), at(2000, 150, true), at(12000, 0, false));
        let cases = [&closed, &slow, &fast, &over];
        let c = curves(&cases);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].closed.map(f64::round), Some(9000.0));
        let rates: Vec<u64> = c[0].points.iter().map(|p| p.case.rate.unwrap().per_sec).collect();
        assert_eq!(rates, [2000, 5000, 12000]);
        let l = lines(&c[0]);
        assert_eq!(l[1].points, [(2000.0, 150.0), (5000.0, 300.0)], "p99 in µs; the rate not kept has no point");
        let (page, files) = section("probe", &cases).unwrap();
        assert_eq!(files.len(), 1);
        assert!(files[0].1.contains("<svg") && files[0].1.contains("closed loop"), "{}", files[0].1);
        assert!(page.contains("| poisson 5.000 k/s | 56% | 5.000 k | 100.0 µs | 300.0 µs | 600.0 µs |"), "{page}");
        assert!(page.contains("did not keep the rate"), "{page}");
    }

    #[test]
    fn a_case_at_one_rate_without_its_closed_loop_run_has_no_curve() {
        let one = at(5000, 300, true);
        assert!(curves(&[&one]).is_empty());
    }
}
