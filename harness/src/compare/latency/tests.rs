use super::*;
use crate::compare::Comparison as _;
use crate::compare::comparison::{Move, Policy};
use crate::compare::fixtures::{case, fork, report};
use crate::rate::{Arrivals, Rate};
use crate::report::open_loop::ForkOpenLoop;

const RATE: Rate = Rate { per_sec: 1000, arrivals: Arrivals::Poisson };

/// An ok open-loop fork whose corrected latency is `p99` ns at p99 (and 1 µs below it).
fn open_fork(index: u32, p99: u64, kept: bool) -> Fork {
    let corrected = vec![(1_000, 980), (p99, 20)];
    let open = ForkOpenLoop {
        scheduled: 1000,
        ran: 1000,
        nanos: 1_000_000_000,
        achieved_per_sec: 1000.0,
        missed: (!kept).then(|| "achieved 900 ops/s".into()),
        uncorrected: corrected.clone(),
        lag: vec![(1_000, 1000)],
        corrected,
    };
    Fork { open_loop: Some(open), ..fork(index, &[1000.0]) }
}

/// An A/B report of one open-loop case whose fork pairs ran at these p99s (base, new).
fn ab(pairs: &[(u64, u64)]) -> Report {
    let mut b = case("probe/fixed_service");
    b.rate = Some(RATE);
    b.baseline_forks = pairs.iter().enumerate().map(|(i, p)| open_fork(i as u32, p.0, true)).collect();
    b.forks = pairs.iter().enumerate().map(|(i, p)| open_fork(i as u32, p.1, true)).collect();
    report(vec![b])
}

#[test]
fn a_higher_p99_in_every_pair_is_slower_and_an_equal_one_is_within_the_band() {
    let slower =
        comparison(&[ab(&[(100_000, 120_000), (101_000, 122_000), (99_000, 119_000)])], &[], Options::default())
            .unwrap();
    let row = &slower.rows[0];
    assert_eq!(row.verdict, Verdict::Slower, "{row:?}");
    assert!((row.test.unwrap().ratio - 1.2).abs() < 0.01 && row.pairs.len() == 3);
    assert_eq!(slower.moves()[0].1, Move::Worse);
    let same = comparison(&[ab(&[(100_000, 100_000), (101_000, 101_000), (99_000, 99_000)])], &[], Options::default())
        .unwrap();
    assert_eq!(same.rows[0].verdict, Verdict::WithinBand);
    let faster = comparison(&[ab(&[(120_000, 100_000), (122_000, 101_000)])], &[], Options::default()).unwrap();
    assert_eq!(faster.rows[0].verdict, Verdict::Faster);
}

#[test]
fn the_percentile_and_the_test_are_chosen() {
    let r = [ab(&[(100_000, 120_000), (101_000, 122_000), (99_000, 119_000)])];
    let p50 = comparison(&r, &[], Options { percentile: Percentile::P50, ..Options::default() }).unwrap();
    assert_eq!(p50.rows[0].verdict, Verdict::WithinBand, "the medians did not move");
    let boot = comparison(&r, &[], Options { method: Method::Bootstrap, ..Options::default() }).unwrap();
    assert_eq!(boot.rows[0].verdict, Verdict::Slower);
    let decision = crate::compare::json::Decision { exit_code: 0, failing: vec![], untested: vec![], warn_only: false };
    let doc = boot.json(decision);
    assert_eq!((doc.metric, doc.test.as_ref().unwrap().method), ("latency", Some("bootstrap")));
}

#[test]
fn forks_that_missed_the_rate_are_left_out_and_the_gate_fails_closed() {
    let mut r = ab(&[(100_000, 120_000), (101_000, 122_000)]);
    for f in &mut r.benchmarks[0].forks {
        *f = open_fork(f.index, 120_000, false);
    }
    let c = comparison(&[r], &[], Options::default()).unwrap();
    assert_eq!((c.rows[0].verdict, c.rows[0].missed), (Verdict::NoData, (0, 2)));
    let gate = Policy { fail_on_regression: true, ..Policy::default() };
    let out = c.outcome(&gate).unwrap();
    assert_eq!(out.untested, ["probe/fixed_service[rate=1000/s] (no data (no fork kept the rate))"]);
    assert!(c.text().contains("0/2 missed the rate"), "{}", c.text());
}

#[test]
fn one_run_per_side_only_looks_slower_and_closed_loop_cases_are_not_compared() {
    let side = |p99: u64| {
        let mut b = case("probe/fixed_service");
        b.rate = Some(RATE);
        b.forks = (0..4).map(|i| open_fork(i, p99 + u64::from(i) * 100, true)).collect();
        report(vec![b, case("baseline/noop")])
    };
    let c = comparison(&[side(100_000)], &[side(130_000)], Options::default()).unwrap();
    assert_eq!(c.rows.len(), 1, "the closed-loop case has no latency to compare");
    assert_eq!(c.rows[0].verdict, Verdict::LooksSlower);
    let gate = Policy { fail_on_regression: true, ..Policy::default() };
    assert!(c.outcome(&gate).unwrap().untested[0].contains("slower? in one run per side"));
    let runs =
        comparison(&[side(100_000), side(100_500)], &[side(130_000), side(130_500)], Options::default()).unwrap();
    assert_eq!((runs.rows[0].verdict, runs.rows[0].runs), (Verdict::Slower, Some((2, 2))));
    let e = comparison(&[side(1)], &[], Options::default()).unwrap_err().0;
    assert!(e.contains("holds one build only"), "{e}");
}
