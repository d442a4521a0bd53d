//! Open-loop mode (`--rate`) in the report: each fork's three histograms (corrected,
//! uncorrected, scheduling lag) and whether it kept its rate, and the case's percentiles over
//! the forks that did. A fork that could not keep the rate measured a different load; its
//! percentiles are kept in the report but left out of the case's.

use super::Fork;
use super::latency::PERCENTILES;
use crate::protocol::{MAX_NANOS, new_histogram};
use crate::rate::Rate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The least share of its intended rate a fork must achieve to count.
pub(crate) const MIN_ACHIEVED: f64 = 0.99;

/// The scheduling lag a fork's p99 may reach and still count, in nanoseconds: past it the
/// generator, not the op, decided when ops started (a busy machine or too fine a schedule).
pub(crate) const MAX_LAG_P99_NANOS: u64 = 200_000;

/// HDR buckets on the wire and in the report: recorded values in nanoseconds and their counts.
pub(crate) type Buckets = Vec<(u64, u64)>;

/// One open-loop fork's schedule and histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ForkOpenLoop {
    /// Ops the schedules started in the measured iterations.
    pub scheduled: u64,
    /// Of those, the ops that ran.
    pub ran: u64,
    /// Wall clock of the measured iterations, summed, in nanoseconds.
    pub nanos: u64,
    /// Ops per second that ran.
    pub achieved_per_sec: f64,
    /// Why the fork did not keep its rate (its percentiles are then left out of the case's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed: Option<String>,
    /// Nanoseconds from each op's intended start to its end, and their counts (HDR buckets,
    /// 3 significant digits): coordinated omission corrected.
    pub corrected: Vec<(u64, u64)>,
    /// Nanoseconds from each op's actual start to its end: what a closed loop reports.
    pub uncorrected: Vec<(u64, u64)>,
    /// Nanoseconds each op started late while its measurer was free (the generator's error).
    pub lag: Vec<(u64, u64)>,
}

impl ForkOpenLoop {
    /// A fork's record, judged against its rate over `planned_nanos` of measured iterations.
    pub(crate) fn judged(
        rate: Rate,
        planned_nanos: u64,
        (scheduled, ran, nanos): (u64, u64, u64),
        (corrected, uncorrected, lag): (Buckets, Buckets, Buckets),
    ) -> ForkOpenLoop {
        let achieved_per_sec = if nanos == 0 { 0.0 } else { ran as f64 * 1e9 / nanos as f64 };
        let intended = scheduled as f64 * 1e9 / planned_nanos.max(1) as f64;
        let lag_p99 = histogram(lag.iter().copied()).map_or(0, |h| h.value_at_quantile(0.99));
        let shown = crate::format::si;
        let missed = if ran < scheduled {
            Some(format!(
                "started {ran} of {scheduled} scheduled ops: the case cannot keep {} ops/s; lower --rate",
                rate.per_sec
            ))
        } else if achieved_per_sec < MIN_ACHIEVED * intended {
            Some(format!(
                "achieved {} ops/s of the {} scheduled (under {:.0}%): the case cannot keep {} ops/s; lower --rate",
                shown(achieved_per_sec),
                shown(intended),
                MIN_ACHIEVED * 100.0,
                rate.per_sec
            ))
        } else if lag_p99 > MAX_LAG_P99_NANOS {
            Some(format!(
                "the generator started ops {} late at p99 (bound {}): the machine was busy or the schedule too fine",
                crate::format::nanos(lag_p99 as f64),
                crate::format::nanos(MAX_LAG_P99_NANOS as f64)
            ))
        } else {
            None
        };
        ForkOpenLoop { scheduled, ran, nanos, achieved_per_sec, missed, corrected, uncorrected, lag }
    }
}

impl ForkOpenLoop {
    /// Its corrected latency at percentile `key` (`p99`, as [`PERCENTILES`] names them), in
    /// nanoseconds; `None` for an unknown key or an empty histogram.
    pub(crate) fn corrected_at(&self, key: &str) -> Option<u64> {
        let q = PERCENTILES.iter().find(|(k, _)| *k == key)?.1;
        histogram(self.corrected.iter().copied()).map(|h| h.value_at_quantile(q))
    }
}

/// The ok timed forks of `forks` that ran open-loop and kept their rate, with their records.
pub(crate) fn kept(forks: &[Fork]) -> impl Iterator<Item = (&Fork, &ForkOpenLoop)> {
    forks
        .iter()
        .filter(|f| f.is_ok_timed())
        .filter_map(|f| f.open_loop.as_ref().map(|o| (f, o)))
        .filter(|(_, o)| o.missed.is_none())
}

/// Percentiles of one histogram, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Percentiles {
    /// Ops recorded.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Keyed `p50`, `p90`, `p99`, `p99.9`, `p99.99`.
    pub percentiles: BTreeMap<String, u64>,
    /// Largest.
    pub max: u64,
}

impl Percentiles {
    fn of(h: &hdrhistogram::Histogram<u64>) -> Percentiles {
        Percentiles {
            count: h.len(),
            mean: h.mean(),
            percentiles: PERCENTILES.iter().map(|(k, q)| (k.to_string(), h.value_at_quantile(*q))).collect(),
            max: h.max(),
        }
    }

    /// The value at percentile `key` (`p99`), if reported.
    pub(crate) fn at(&self, key: &str) -> Option<u64> {
        self.percentiles.get(key).copied()
    }
}

/// An open-loop case: its rate, the forks that kept it, and the percentiles over those forks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct OpenLoopSummary {
    /// The case's rate.
    pub rate: Rate,
    /// Timed forks that finished ok and kept the rate.
    pub forks_kept: u32,
    /// Timed forks that finished ok but did not keep it.
    pub forks_missed: u32,
    /// Mean achieved ops per second over the kept forks.
    pub achieved_per_sec: Option<f64>,
    /// Latency from each op's intended start, over the kept forks.
    pub corrected: Option<Percentiles>,
    /// Latency from each op's actual start, over the kept forks.
    pub uncorrected: Option<Percentiles>,
    /// Scheduling lag, over the kept forks.
    pub lag: Option<Percentiles>,
}

impl OpenLoopSummary {
    /// The case's summary from its ok timed forks; `None` when none ran open-loop.
    pub(crate) fn from_forks(rate: Rate, forks: &[Fork]) -> Option<OpenLoopSummary> {
        let open: Vec<&ForkOpenLoop> =
            forks.iter().filter(|f| f.is_ok_timed()).filter_map(|f| f.open_loop.as_ref()).collect();
        if open.is_empty() {
            return None;
        }
        let kept: Vec<&&ForkOpenLoop> = open.iter().filter(|o| o.missed.is_none()).collect();
        let merged = |pick: fn(&ForkOpenLoop) -> &Buckets| {
            histogram(kept.iter().flat_map(|o| pick(o).iter().copied())).map(|h| Percentiles::of(&h))
        };
        Some(OpenLoopSummary {
            rate,
            forks_kept: kept.len() as u32,
            forks_missed: (open.len() - kept.len()) as u32,
            achieved_per_sec: (!kept.is_empty())
                .then(|| kept.iter().map(|o| o.achieved_per_sec).sum::<f64>() / kept.len() as f64),
            corrected: merged(|o| &o.corrected),
            uncorrected: merged(|o| &o.uncorrected),
            lag: merged(|o| &o.lag),
        })
    }
}

/// A histogram of recorded buckets; `None` when empty or out of bounds.
fn histogram(buckets: impl IntoIterator<Item = (u64, u64)>) -> Option<hdrhistogram::Histogram<u64>> {
    let mut h = new_histogram();
    for (v, n) in buckets {
        h.record_n(v.clamp(1, MAX_NANOS), n).ok()?;
    }
    (!h.is_empty()).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::Arrivals;

    const RATE: Rate = Rate { per_sec: 1000, arrivals: Arrivals::Poisson };

    fn judged(scheduled: u64, ran: u64, nanos: u64, lag: u64) -> ForkOpenLoop {
        ForkOpenLoop::judged(
            RATE,
            1_000_000_000,
            (scheduled, ran, nanos),
            (vec![(5, ran)], vec![(4, ran)], vec![(lag, ran)]),
        )
    }

    #[test]
    fn a_fork_keeps_its_rate_when_every_op_ran_on_time() {
        let f = judged(1000, 1000, 1_000_500_000, 10_000);
        assert_eq!(f.missed, None);
        assert!((f.achieved_per_sec - 999.5).abs() < 0.1);
    }

    #[test]
    fn a_fork_misses_when_ops_were_cut_off_ran_late_overall_or_the_generator_lagged() {
        assert!(judged(1000, 900, 2_000_000_000, 10).missed.unwrap().contains("started 900 of 1000"));
        // Every op ran, but the last ones only after a queue: 1000 ops in 1.2 s.
        assert!(judged(1000, 1000, 1_200_000_000, 10).missed.unwrap().contains("cannot keep 1000 ops/s"));
        assert!(judged(1000, 1000, 1_000_000_000, 900_000).missed.unwrap().contains("late at p99"));
    }

    #[test]
    fn the_case_merges_only_the_forks_that_kept_the_rate() {
        let mut forks = vec![];
        for (i, open) in
            [judged(1000, 1000, 1_000_000_000, 10), judged(1000, 500, 2_000_000_000, 10)].into_iter().enumerate()
        {
            let mut f = Fork::pending(i as u32, None);
            f.status = super::super::ForkStatus::Ok;
            f.open_loop = Some(open);
            forks.push(f);
        }
        let s = OpenLoopSummary::from_forks(RATE, &forks).unwrap();
        assert_eq!((s.forks_kept, s.forks_missed), (1, 1));
        assert_eq!(s.corrected.as_ref().map(|p| p.count), Some(1000));
        assert_eq!(s.corrected.unwrap().at("p99"), Some(5));
        assert!(OpenLoopSummary::from_forks(RATE, &forks[..0]).is_none());
    }
}
