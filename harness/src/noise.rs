//! The noise report: per case, how much the iterations vary, where the variance lies (between
//! forks or within them), whether throughput drifts across iterations, outliers, how many forks a
//! stated precision needs, and one plain recommendation. Pure over a report; printed after every
//! run and by `harness noise`.

use crate::compare::throughput::fork_samples;
use crate::format::nanos;
use crate::report::{Benchmark, Report};
use crate::stats::spread::{self, OUTLIER_Z, Trend, VarianceSplit};
use crate::stats::summarize;

/// Significance level of the trend test.
const TREND_ALPHA: f64 = 0.05;
/// A trend smaller than this over the whole fork (fraction of the mean) is not worth acting on.
const TREND_MIN_DRIFT: f64 = 0.005;
/// Within-fork coefficient of variation above which iterations are too short.
const WITHIN_CV_HIGH: f64 = 0.02;
/// Share of the variance between forks above which more forks are the fix.
const BETWEEN_SHARE_HIGH: f64 = 0.5;
/// More forks than this to reach the precision is out of reach: the default budget of
/// `--forks auto`, past which the advice names cheaper ways to a decision.
const REACHABLE_FORKS: u32 = 30;

/// What to change, most important first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Advice {
    /// Run more forks (the number needed, when it can be estimated).
    AddForks(Option<u32>),
    /// The precision needs more forks than [`REACHABLE_FORKS`]: the cheaper ways to a decision.
    OutOfReach(Reach),
    /// Throughput still rises across iterations.
    AddWarmup,
    /// Throughput falls across iterations.
    Drifting,
    /// Iterations within a fork vary a lot.
    LengthenIterations,
    /// Outlier iterations.
    QuietMachine(usize),
    /// Nothing to change.
    Ok,
}

impl Advice {
    /// One line for the reader.
    pub(crate) fn text(&self) -> String {
        match self {
            Advice::AddForks(Some(n)) => format!("add forks (--forks {n})"),
            Advice::AddForks(None) => "add forks (--forks 3 or more: one fork hides fork-to-fork variation)".into(),
            Advice::OutOfReach(r) => r.text(),
            Advice::AddWarmup => "add warmup (throughput still rises across iterations)".into(),
            Advice::Drifting => {
                "throughput falls across iterations: state grows or the machine slows; check the workload".into()
            }
            Advice::LengthenIterations => "lengthen iterations (--time): they vary a lot within a fork".into(),
            Advice::QuietMachine(n) => format!("quiet the machine or --pin: {n} outlier iteration(s)"),
            Advice::Ok => "ok".into(),
        }
    }
}

/// What reaching the precision would take, and the cheaper ways to decide a change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reach {
    /// Forks the precision needs.
    pub forks: u32,
    /// The precision (a fraction).
    pub precision: f64,
    /// Wall seconds of one of this run's forks (median).
    pub fork_secs: f64,
    /// Wall seconds of a fork at the A/B defaults: this run's start-up and setup, plus the
    /// defaults' iterations.
    pub short_fork_secs: f64,
}

impl Reach {
    /// From the case's forks: their wall time, less the iterations they planned, is what every
    /// fork pays however short its iterations.
    fn of(b: &Benchmark, forks: u32, precision: f64) -> Option<Reach> {
        let walls: Vec<f64> =
            b.forks.iter().filter(|f| f.is_ok_timed() && f.wall_nanos > 0).map(|f| f.wall_nanos as f64 / 1e9).collect();
        let fork_secs = crate::stats::median(&walls)?;
        let overhead = (fork_secs - b.settings.planned_nanos() as f64 / 1e9).max(0.0);
        let short = crate::plan::AB_DEFAULTS.planned().as_secs_f64();
        Some(Reach { forks, precision, fork_secs, short_fork_secs: overhead + short })
    }

    /// `±1% needs --forks 1332 (1h 32m …; 10m at …): to decide a change sooner, …`.
    fn text(&self) -> String {
        let time = crate::format::whole_seconds;
        let n = f64::from(self.forks);
        let pairs = f64::from(REACHABLE_FORKS);
        format!(
            "±{}% needs --forks {} ({} at {:.1}s a fork; {} with the A/B defaults' {:.2}s forks): out of reach; to decide a change sooner, `harness ab REF --forks auto` tests fork pairs run side by side (at most {REACHABLE_FORKS} pairs, ~{}), or count the work instead of timing it: --instructions (the client's; exact where the case is deterministic)",
            self.precision * 100.0,
            self.forks,
            time(n * self.fork_secs),
            self.fork_secs,
            time(n * self.short_fork_secs),
            self.short_fork_secs,
            time(2.0 * pairs * self.short_fork_secs),
        )
    }
}

/// The noise diagnosis of one case.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseNoise {
    /// The case.
    pub id: crate::report::CaseId,
    /// Ok timed forks.
    pub forks: usize,
    /// Their measured iterations.
    pub iterations: usize,
    /// Mean ops/s.
    pub mean: f64,
    /// Coefficient of variation of all iterations (stdev / mean).
    pub cv: Option<f64>,
    /// Variance between forks and within forks.
    pub split: Option<VarianceSplit>,
    /// Pooled within-fork trend.
    pub trend: Option<Trend>,
    /// Outlier iterations (modified z-score above 3.5).
    pub outliers: usize,
    /// Forks needed for the requested precision at 95%.
    pub forks_needed: Option<u32>,
    /// Why the score is implausibly fast.
    pub implausible: Option<String>,
    /// More measuring threads than cores: the case measures contention.
    pub oversubscribed: Option<String>,
    /// The score sits at its scheme's limit: it measures the limit, not the cost.
    pub at_limit: Option<String>,
    /// What to change.
    pub advice: Vec<Advice>,
}

/// Why `per_op_nanos` is too fast to believe, against the workload's declared floor (0: it
/// does nothing by design) or the general one of 1 ns.
fn implausible(floor: Option<u64>, per_op_nanos: f64) -> Option<String> {
    match floor {
        Some(0) => None,
        Some(f) if per_op_nanos < f as f64 => Some(format!(
            "{} per op is faster than the workload's floor of {} (a network round trip): served from a cache, or not doing its work?",
            nanos(per_op_nanos),
            nanos(f as f64)
        )),
        _ if per_op_nanos < 1.0 => {
            Some(format!("{per_op_nanos:.2} ns per op: under 1 ns, the op may have been optimized away"))
        }
        _ => None,
    }
}

/// What to change, from the case's spread: more forks (`needed`: how many, and what that
/// would take), warmup, longer iterations, a quieter machine; `Ok` when nothing.
fn advice(
    groups: &[Vec<f64>],
    mean: f64,
    cv: Option<f64>,
    split: Option<spread::VarianceSplit>,
    needed: Option<(u32, Option<Reach>)>,
    trend: Option<spread::Trend>,
    outliers: usize,
) -> Vec<Advice> {
    let mut advice = vec![];
    if groups.len() < 2 {
        advice.push(Advice::AddForks(None));
    } else if let (Some(sp), Some((n, reach))) = (split, needed)
        && sp.between_share() > BETWEEN_SHARE_HIGH
        && n as usize > groups.len()
    {
        advice.push(match reach {
            Some(r) if n > REACHABLE_FORKS => Advice::OutOfReach(r),
            _ => Advice::AddForks(Some(n)),
        });
    }
    if let Some(t) = trend {
        let per_fork = groups.iter().map(Vec::len).max().unwrap_or(1).saturating_sub(1) as f64;
        if t.p_value < TREND_ALPHA && (t.slope * per_fork / mean).abs() > TREND_MIN_DRIFT {
            advice.push(if t.slope > 0.0 { Advice::AddWarmup } else { Advice::Drifting });
        }
    }
    if split.is_some_and(|sp| sp.within.sqrt() / mean > WITHIN_CV_HIGH)
        || (groups.len() < 2 && cv.is_some_and(|c| c > WITHIN_CV_HIGH))
    {
        advice.push(Advice::LengthenIterations);
    }
    if outliers > 0 {
        advice.push(Advice::QuietMachine(outliers));
    }
    if advice.is_empty() {
        advice.push(Advice::Ok);
    }
    advice
}

/// Diagnoses one case; `precision` is a fraction (0.01 for ±1%). `None` without ok iterations,
/// and for a case measured in steps, whose iterations differ by design (each a larger table).
pub(crate) fn diagnose(b: &Benchmark, precision: f64) -> Option<CaseNoise> {
    if b.is_stepped() {
        return None;
    }
    let groups = fork_samples(&b.forks);
    let all: Vec<f64> = groups.iter().flatten().copied().collect();
    let s = summarize(&all)?;
    let cv = (s.stdev.is_finite() && s.mean != 0.0).then(|| s.stdev / s.mean);
    let split = spread::variance_split(&groups);
    let trend = spread::trend(&groups);
    let outliers = spread::outliers(&all).len();
    let fork_means: Vec<f64> = groups.iter().map(|g| g.iter().sum::<f64>() / g.len() as f64).collect();
    let forks_needed = spread::forks_needed(&fork_means, precision, 0.95);
    let implausible = implausible(b.op_floor_nanos, 1e9 / s.mean);
    let needed = forks_needed.map(|n| (n, Reach::of(b, n, precision)));
    let advice = advice(&groups, s.mean, cv, split, needed, trend, outliers);
    let oversubscribed = b.concurrency.as_ref().filter(|c| c.count as usize > c.cores).map(|c| {
        format!(
            "{} {} on {} cores measure contention, not parallelism",
            c.count,
            c.kind.as_deref().unwrap_or("threads"),
            c.cores
        )
    });
    Some(CaseNoise {
        oversubscribed,
        at_limit: b.at_ceiling(),
        id: b.id(),
        forks: groups.len(),
        iterations: all.len(),
        mean: s.mean,
        cv,
        split,
        trend,
        outliers,
        forks_needed,
        implausible,
        advice,
    })
}

/// Diagnoses every case of `report` that measured something.
pub(crate) fn diagnose_all(report: &Report, precision: f64) -> Vec<CaseNoise> {
    report.benchmarks.iter().filter_map(|b| diagnose(b, precision)).collect()
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// The per-case table, implausibility warnings and the outlier rule.
pub(crate) fn render(cases: &[CaseNoise], precision: f64) -> String {
    if cases.is_empty() {
        return String::new();
    }
    let mut out = if cases.iter().any(|c| c.iterations > 1) {
        spread_table(cases, precision)
    } else {
        "noise: one measured iteration per case, so there is no spread to diagnose: for that, run with --forks 3 --iterations 5 and read `harness noise REPORT.json`.\n".into()
    };
    for c in cases.iter().filter(|c| c.implausible.is_some()) {
        out.push_str(&format!("warning: {} implausibly fast: {}\n", c.id, c.implausible.as_deref().unwrap_or("")));
    }
    for c in cases.iter().filter(|c| c.oversubscribed.is_some()) {
        out.push_str(&format!("warning: {}: {}\n", c.id, c.oversubscribed.as_deref().unwrap_or("")));
    }
    for limit in cases.iter().filter_map(|c| c.at_limit.as_ref()) {
        out.push_str(&format!("note: {limit}\n"));
    }
    out
}

/// The table of each case's spread, advice and the rules behind its columns.
fn spread_table(cases: &[CaseNoise], precision: f64) -> String {
    let precision_col = format!("forks for ±{}%", precision * 100.0);
    let header = ["benchmark", "CV", "between forks", "trend/iter", "outliers", precision_col.as_str(), "advice"];
    let mut rows = vec![header.map(String::from).to_vec()];
    for c in cases {
        let trend = c.trend.map_or("-".into(), |t| {
            let star = if t.p_value < TREND_ALPHA { "*" } else { "" };
            format!("{:+.2}%{star}", t.slope / c.mean * 100.0)
        });
        rows.push(vec![
            c.id.to_string(),
            pct(c.cv),
            pct(c.split.map(|s| s.between_share())),
            trend,
            format!("{}/{}", c.outliers, c.iterations),
            c.forks_needed.map_or("-".into(), |n| n.to_string()),
            c.advice.iter().map(Advice::text).collect::<Vec<_>>().join("; "),
        ]);
    }
    let mut out = crate::format::table(&rows, |i| (1..6).contains(&i));
    out.push_str(&format!(
        "CV over all iterations; between forks = share of the variance between fork means (one-way ANOVA); trend = pooled within-fork slope (* p < {TREND_ALPHA}); outliers: modified z-score > {OUTLIER_Z}.\n"
    ));
    out
}

/// The system block of `harness noise`: machine settings and the run's warnings.
pub(crate) fn render_system(report: &Report) -> String {
    let m = &report.meta;
    let s = &m.system;
    let or = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_string());
    let mut out = String::new();
    let load = |l: Option<[f64; 3]>| l.map_or("unknown".into(), |l| format!("{:.2}", l[0]));
    out.push_str(&format!(
        "system: {} build; {} cores; load {} at start, {} at end; governor {}; turbo {}; ASLR {}; cgroup CPU quota {}; workers {}; other processes {}\n",
        m.build_profile,
        m.cpu.available_parallelism,
        load(m.load_average_start),
        load(m.load_average_end),
        or(&s.governor, "not exposed"),
        or(&s.turbo, "unknown"),
        or(&s.aslr, "unknown"),
        m.cgroup.cpu_quota,
        m.settings.as_ref().and_then(|x| x.pin.clone()).map_or("not pinned".into(), |p| format!("pinned to CPUs {p}")),
        s.other_cpu_cores.map_or("unknown".into(), |c| format!("{c:.2} cores busy")),
    ));
    for w in &s.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::timed;

    #[test]
    fn a_rising_trend_asks_for_warmup() {
        let b = timed("warm", &[&[90.0, 95.0, 100.0, 105.0], &[91.0, 96.0, 99.0, 104.0], &[89.0, 95.5, 100.5, 105.5]]);
        let n = diagnose(&b, 0.01).unwrap();
        assert!(n.trend.unwrap().p_value < 0.001);
        assert!(n.advice.contains(&Advice::AddWarmup), "{:?}", n.advice);
    }

    #[test]
    fn a_between_fork_shift_asks_for_forks() {
        let b = timed("forky", &[&[100.0, 100.2, 99.9], &[110.0, 110.1, 109.8], &[95.0, 95.2, 94.9]]);
        let n = diagnose(&b, 0.01).unwrap();
        assert!(n.split.unwrap().between_share() > 0.95);
        assert!(matches!(n.advice[0], Advice::AddForks(Some(k)) if k > 3), "{:?}", n.advice);
        assert!(!n.advice.contains(&Advice::AddWarmup), "no trend within forks: {:?}", n.advice);
    }

    #[test]
    fn a_precision_out_of_reach_names_the_cheaper_ways_with_their_time() {
        // Fork means 100, 110, 95: ±1% needs far more than 30 forks.
        let mut b = timed("bimodal", &[&[100.0, 100.2, 99.9], &[110.0, 110.1, 109.8], &[95.0, 95.2, 94.9]]);
        b.settings = crate::report::CaseSettings {
            warmup_iterations: 1,
            warmup_nanos: 1_000_000_000,
            iterations: 3,
            iteration_nanos: 1_000_000_000,
            ..b.settings
        };
        for f in &mut b.forks {
            f.wall_nanos = 4_200_000_000;
        }
        let n = diagnose(&b, 0.01).unwrap();
        let Advice::OutOfReach(r) = &n.advice[0] else { panic!("{:?}", n.advice) };
        assert!(r.forks > REACHABLE_FORKS && Some(r.forks) == n.forks_needed, "{r:?}");
        // 0.2 s of start-up and setup on top of the 4 s planned: 0.5 s at the A/B defaults.
        assert!((r.fork_secs - 4.2).abs() < 1e-9 && (r.short_fork_secs - 0.5).abs() < 1e-9, "{r:?}");
        let text = r.text();
        assert!(text.starts_with(&format!("±1% needs --forks {} (", r.forks)), "{text}");
        assert!(text.contains("at 4.2s a fork") && text.contains("A/B defaults' 0.50s forks"), "{text}");
        // 30 pairs of two 0.5 s forks.
        assert!(text.contains("at most 30 pairs, ~30s)") && text.contains("--instructions"), "{text}");
        // Within reach: plain more forks.
        let near = timed("near", &[&[100.0, 100.1], &[101.0, 101.1], &[100.4, 100.5]]);
        assert!(matches!(diagnose(&near, 0.01).unwrap().advice[0], Advice::AddForks(Some(k)) if k <= REACHABLE_FORKS));
    }

    #[test]
    fn a_quiet_case_is_ok_and_one_fork_asks_for_more() {
        let b = timed(
            "quiet",
            &[&[100.0, 100.1, 99.9, 100.0], &[100.05, 99.95, 100.0, 100.1], &[99.9, 100.0, 100.1, 100.0]],
        );
        let n = diagnose(&b, 0.01).unwrap();
        assert_eq!(n.advice, [Advice::Ok]);
        assert_eq!(n.outliers, 0);
        let one = diagnose(&timed("one", &[&[100.0, 100.1, 99.9]]), 0.01).unwrap();
        assert_eq!(one.advice, [Advice::AddForks(None)]);
    }

    #[test]
    fn outliers_and_implausible_speeds_are_flagged() {
        let b = timed("spiky", &[&[100.0, 100.1, 60.0, 99.9], &[100.0, 100.2, 99.8, 100.1]]);
        assert!(diagnose(&b, 0.01).unwrap().advice.contains(&Advice::QuietMachine(1)));
        let fast = timed("noop", &[&[2e9, 2e9, 2e9]]);
        assert!(diagnose(&fast, 0.01).unwrap().implausible.unwrap().contains("under 1 ns"));
        // A workload that does nothing by design declares a floor of 0: its speed is expected.
        let noop = crate::report::Benchmark { op_floor_nanos: Some(0), ..fast.clone() };
        assert_eq!(diagnose(&noop, 0.01).unwrap().implausible, None);
        let mut net = timed("net", &[&[1e6, 1e6, 1e6]]);
        net.op_floor_nanos = Some(2_000);
        let why = diagnose(&net, 0.01).unwrap().implausible.unwrap();
        assert!(why.contains("1.000 µs per op is faster than the workload's floor of 2.000 µs"), "{why}");
        let text = render(&diagnose_all(&crate::compare::fixtures::report(vec![net]), 0.01), 0.01);
        assert!(text.contains("warning: net implausibly fast"), "{text}");
        // A score at its scheme's limit is named as such, one below it is not.
        let ceiling = crate::report::OpsCeiling { ops_per_sec: 4_096_000.0, why: "Snowflake's 12-bit sequence".into() };
        let limited = crate::report::Benchmark {
            ops_ceiling: Some(ceiling),
            ..timed("snowflake", &[&[4.0959e6, 4.096e6, 4.0958e6], &[4.096e6, 4.0961e6, 4.0959e6]])
        };
        let text = render(&diagnose_all(&crate::compare::fixtures::report(vec![limited.clone()]), 0.01), 0.01);
        assert!(
            text.contains("note: snowflake: 4.096 M ops/s is 100% of its limit (Snowflake's 12-bit sequence)"),
            "{text}"
        );
        let mut below = timed("snowflake", &[&[1e6, 1.01e6, 0.99e6], &[1e6, 1.0e6, 1.01e6]]);
        below.ops_ceiling = limited.ops_ceiling.clone();
        assert_eq!(below.at_ceiling(), None);
    }
}
