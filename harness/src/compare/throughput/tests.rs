//! The throughput comparison on reports built in code.

use super::super::fixtures::*;
use super::render::{legend, render_markdown, render_text, summary_line, to_json};
use super::*;
use crate::report::ForkStatus;

const A: &[f64] = &[100.0, 101.0, 99.0, 100.5];
const B: &[f64] = &[99.5, 100.2, 100.8, 99.8];
const C: &[f64] = &[101.0, 99.0, 100.4, 100.1];

fn scaled(xs: &[f64], k: f64) -> Vec<f64> {
    xs.iter().map(|v| v * k).collect()
}

fn one(r: &Report) -> &[Report] {
    std::slice::from_ref(r)
}

/// A run of case `a` whose three forks ran at A, B and C scaled by `k`.
fn run_at(k: f64) -> Report {
    report(vec![timed("a", &[&scaled(A, k), &scaled(B, k), &scaled(C, k)])])
}

#[test]
fn lockstep_pairs_take_the_median_of_their_iteration_ratios() {
    // Base and new drift together iteration by iteration; one iteration of new was hit by a
    // stall. Side by side, every ratio but that one is 0.97; by medians it would be 0.99.
    let base = [100.0, 90.0, 110.0, 105.0, 95.0];
    let new = [97.0, 87.3, 106.7, 101.85, 30.0];
    let (b, n) = (fork(0, &base), fork(0, &new));
    let by_medians = pair_ratios(std::slice::from_ref(&b), std::slice::from_ref(&n));
    assert!((by_medians[0] - 97.0 / 100.0).abs() < 1e-9, "{by_medians:?}");
    let side_by_side = |f: &Fork| Fork { lockstep: true, ..f.clone() };
    let r = pair_ratios(&[side_by_side(&b)], &[side_by_side(&n)]);
    assert!((r[0] - 0.97).abs() < 1e-9, "{r:?}");
    // Unequal iteration counts cannot be paired: back to the ratio of medians.
    let short = Fork { iterations: n.iterations[..4].to_vec(), ..side_by_side(&n) };
    let r = pair_ratios(&[side_by_side(&b)], &[short]);
    assert!((r[0] - 99.425 / 100.0).abs() < 1e-9, "{r:?}");
}

#[test]
fn a_report_against_itself_is_no_change() {
    let r = report(vec![timed("a", &[A, B, C]), timed("b", &[B, A, C])]);
    let c = compare(one(&r), one(&r), Options::default());
    assert!(c.rows.iter().all(|row| row.verdict == Verdict::WithinBand), "{c:?}");
    assert!(c.rows.iter().all(|r| r.verdict != Verdict::Slower));
    assert!(render_text(&c).contains("no change (within ±1%)"));
}

#[test]
fn a_shift_of_twenty_percent_over_three_runs_a_side_is_slower_or_faster() {
    let base = [run_at(1.0), run_at(1.01), run_at(0.99)];
    let new = [run_at(0.8), run_at(0.81), run_at(0.79)];
    let c = compare(&base, &new, Options::default());
    assert_eq!((c.rows[0].verdict, c.unit(), c.rows[0].runs), (Verdict::Slower, "run", Some((3, 3))), "{c:?}");
    assert!((c.rows[0].test.unwrap().ratio - 0.8).abs() < 1e-3);
    assert_eq!(c.rows[0].forks, (9, 9));
    assert!(c.rows.iter().any(|r| r.verdict == Verdict::Slower));
    let back = compare(&new, &base, Options::default());
    assert_eq!(back.rows[0].verdict, Verdict::Faster);
    assert!(render_markdown(&c).starts_with("**1 slower, 0 faster"), "{}", render_markdown(&c));
    assert!(render_text(&c).contains("9/9 (3/3)") && legend(&c).contains("3 base and 3 new runs"));
}

#[test]
fn one_run_per_side_only_looks_different() {
    let c = compare(one(&run_at(1.0)), one(&run_at(0.8)), Options::default());
    assert_eq!((c.rows[0].verdict, c.unit()), (Verdict::LooksSlower, "fork"), "{c:?}");
    assert!(c.rows.iter().all(|r| r.verdict != Verdict::Slower));
    assert!(summary_line(&c).contains("1 unconfirmed (one run per side)"), "{}", summary_line(&c));
    assert!(render_text(&c).contains("slower? (1 run each)") && legend(&c).contains("harness ab REF"));
    let back = compare(one(&run_at(0.8)), one(&run_at(1.0)), Options::default());
    assert_eq!(back.rows[0].verdict, Verdict::LooksFaster);
}

#[test]
fn runs_that_drift_apart_are_not_called_different() {
    // Within each run the forks agree to 1%, but the runs themselves wander by ±10%: the
    // forks of one run per side call a 10% change; the runs, rightly, cannot.
    let base = [run_at(1.0), run_at(1.1)];
    let new = [run_at(0.9), run_at(1.05)];
    let by_forks = compare(one(&base[0]), one(&new[0]), Options::default());
    assert_eq!(by_forks.rows[0].verdict, Verdict::LooksSlower);
    let by_runs = compare(&base, &new, Options::default());
    assert_eq!(by_runs.rows[0].verdict, Verdict::NoChange, "{by_runs:?}");
    // A case that one side's runs lack is tested on the runs that hold it.
    let mut gappy = base.clone();
    gappy[1].benchmarks.clear();
    let c = compare(&gappy, &new, Options::default());
    assert_eq!((c.rows[0].verdict, c.rows[0].runs), (Verdict::TooFewForks, Some((1, 2))));
    assert!(legend(&c).contains("at least 2 runs"), "{}", legend(&c));
}

#[test]
fn a_significant_shift_inside_the_band_is_no_change() {
    let base = report(vec![timed("x", &[A, B, C])]);
    let new = report(vec![timed("x", &[&scaled(A, 1.005), &scaled(B, 1.005), &scaled(C, 1.005)])]);
    assert_eq!(compare(one(&base), one(&new), Options::default()).rows[0].verdict, Verdict::WithinBand);
    let tight = Options { noise_band_pct: 0.1, ..Options::default() };
    assert_eq!(compare(one(&base), one(&new), tight).rows[0].verdict, Verdict::LooksFaster);
}

#[test]
fn one_fork_per_side_cannot_be_tested_and_says_what_can() {
    let base = report(vec![timed("x", &[A])]);
    let new = report(vec![timed("x", &[&scaled(A, 0.5)])]);
    let c = compare(one(&base), one(&new), Options::default());
    assert_eq!(c.rows[0].verdict, Verdict::TooFewForks);
    assert!(legend(&c).contains("--forks 5"), "{}", legend(&c));
}

#[test]
fn missing_extra_and_empty_cases() {
    let base = report(vec![timed("gone", &[A]), timed("empty", &[A])]);
    let mut empty = case("empty");
    empty.forks = vec![];
    let new = report(vec![empty, timed("fresh", &[A])]);
    let v: Vec<Verdict> = compare(one(&base), one(&new), Options::default()).rows.iter().map(|r| r.verdict).collect();
    assert_eq!(v, [Verdict::Missing, Verdict::NoData, Verdict::Extra]);
}

#[test]
fn ab_sides_are_paired_by_fork_index() {
    let mut b = timed("a", &[A, B, C]);
    b.baseline_forks = timed("a", &[&scaled(A, 1.1), &scaled(B, 1.1), &scaled(C, 1.1)]).forks;
    // A failed baseline fork drops its pair, not the alignment of the others.
    b.baseline_forks[1].status = ForkStatus::Failed;
    let c = compare_sides(&report(vec![b]), Options::default());
    assert_eq!(c.rows[0].pairs.len(), 2);
    assert!(c.rows[0].pairs.iter().all(|p| (p - 1.0 / 1.1).abs() < 1e-9), "{:?}", c.rows[0].pairs);
    assert_eq!(c.rows[0].verdict, Verdict::Slower);
    assert!(render_text(&c).contains("fork pairs"));
}

#[test]
fn a_moved_canary_is_named_next_to_every_verdict() {
    use crate::report::meta::{Canary, CanaryReading};
    let canary = |rate: f64| Canary {
        workload: "baseline/busy_loop[work=1000]".into(),
        readings: ["start", "end"]
            .iter()
            .map(|at| CanaryReading { at: (*at).into(), ops_per_sec: rate, iterations: vec![rate] })
            .collect(),
    };
    let mut base = report(vec![timed("a", &[A, B, C])]);
    let mut new = report(vec![timed("a", &[&scaled(A, 0.8), &scaled(B, 0.8), &scaled(C, 0.8)])]);
    base.meta.canary = Some(canary(1000.0));
    new.meta.canary = Some(canary(950.0));
    let c = compare(one(&base), one(&new), Options::default());
    assert!(c.machine_changed());
    let text = render_text(&c);
    assert!(text.contains("slower? (1 run each) (machine changed)") && text.contains("ran 5.0% slower"), "{text}");
    new.meta.canary = Some(canary(1002.0));
    let c = compare(one(&base), one(&new), Options::default());
    assert!(!c.machine_changed() && render_text(&c).contains("kept its speed"));
}

/// An instruction fork that counted `per_op` instructions per op over 1,000 ops.
fn counted(per_op: f64) -> Fork {
    Fork {
        status: ForkStatus::Ok,
        kind: crate::report::ForkKind::Instructions,
        instructions: Some(crate::report::InstructionCount {
            ops: 1000,
            total: (per_op * 1000.0) as u64,
            deterministic: true,
        }),
        ..Fork::pending(9, Some(1))
    }
}

/// An A/B case 10% slower in time whose builds counted `base` and `new` instructions per op.
fn slower_with_counts(base: f64, new: f64) -> Benchmark {
    let mut b = timed("a", &[A, B, C]);
    b.baseline_forks = timed("a", &[&scaled(A, 1.1), &scaled(B, 1.1), &scaled(C, 1.1)]).forks;
    b.add_baseline_fork(counted(base));
    b.add_fork(counted(new));
    b
}

#[test]
fn a_difference_with_the_same_instructions_is_labelled_a_layout_suspect() {
    let same = compare_sides(&report(vec![slower_with_counts(5_610.423, 5_610.423)]), Options::default());
    let row = &same.rows[0];
    assert_eq!(row.verdict, Verdict::SlowerSameInstructions, "{row:?}");
    assert_eq!(row.instructions, Some((5_610.423, 5_610.423)));
    let text = render_text(&same);
    assert!(text.contains("SLOWER (same instructions: layout?)") && text.contains("instr new/base"), "{text}");
    assert!(
        text.contains("One code layout per build (no --layouts)"),
        "the legend says it was not tested across layouts: {text}"
    );
    assert!(summary_line(&same).contains("1 slower, 0 faster (1 with the same instructions: layout?)"));
    let json = to_json(
        &same,
        crate::compare::json::Decision { exit_code: 0, failing: vec![], untested: vec![], warn_only: false },
    );
    assert_eq!(json.cases[0].verdict, "slower_same_instructions");
    // Within 0.1% is the same; beyond it the verdict stands and the ratio is shown beside it.
    let close = compare_sides(&report(vec![slower_with_counts(10_000.0, 10_009.0)]), Options::default());
    assert_eq!(close.rows[0].verdict, Verdict::SlowerSameInstructions);
    let changed = compare_sides(&report(vec![slower_with_counts(10_000.0, 10_300.0)]), Options::default());
    assert_eq!(changed.rows[0].verdict, Verdict::Slower, "a case whose instructions changed is never a layout suspect");
    assert!(render_text(&changed).contains("1.0300"), "{}", render_text(&changed));
    // Without both counts there is nothing to label.
    let mut one_side = slower_with_counts(1.0, 1.0);
    one_side.baseline_instructions = None;
    assert_eq!(compare_sides(&report(vec![one_side]), Options::default()).rows[0].verdict, Verdict::Slower);
}

#[test]
fn pairs_that_ran_layout_variants_are_tested_per_variant() {
    // Six pairs over three variants: the test has three units, two degrees of freedom.
    let mut b = timed("a", &[A, B, C, A, B, C]);
    b.baseline_forks = timed("a", &[&scaled(A, 1.1), &scaled(B, 1.1), &scaled(C, 1.1), A, B, C]).forks;
    for (i, (n, base)) in b.forks.iter_mut().zip(b.baseline_forks.iter_mut()).enumerate() {
        n.layout = Some(i as u32 % 3 + 1);
        base.layout = n.layout;
    }
    let c = compare_sides(&report(vec![b]), Options::default());
    let t = c.rows[0].test.unwrap();
    assert_eq!((c.rows[0].pairs.len(), t.df), (6, 2.0), "{:?}", c.rows[0]);
}
