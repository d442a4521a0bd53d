//! Open-loop load (`--rate`): the arrival rate of a case, how ops arrive (Poisson or constant),
//! and the schedule of intended start times a measurer follows.
//!
//! Poisson arrivals are the default: independent clients arrive that way, and it is the model
//! queueing theory answers for (M/D/1, M/M/1), so a measured mean can be checked against the
//! Pollaczek–Khinchine value. Constant arrivals (wrk2's) never bunch, so they show the op's own
//! time at a load and hide the queueing that bursts cause.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The highest `--rate` accepted, in ops per second per fork: one op every 100 ns, about
/// four clock reads; a schedule finer than that measures the clock.
pub(crate) const MAX_RATE: u64 = 10_000_000;

/// How the ops of an open-loop fork arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Arrivals {
    /// Exponential gaps with the rate's mean (independent clients).
    #[default]
    Poisson,
    /// One op every 1/rate seconds.
    Constant,
}

impl Arrivals {
    /// The name used on the command line and in reports.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Constant => "constant",
        }
    }
}

/// An open-loop case's load: ops per second per fork (shared by its measurers) and how they
/// arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Rate {
    /// Ops per second the fork's schedule starts, over all its measurers.
    pub per_sec: u64,
    /// Poisson or constant arrivals.
    pub arrivals: Arrivals,
}

impl fmt::Display for Rate {
    /// `5000/s`, with `-constant` for constant arrivals (Poisson is the default).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.arrivals {
            Arrivals::Poisson => write!(f, "{}/s", self.per_sec),
            Arrivals::Constant => write!(f, "{}/s-constant", self.per_sec),
        }
    }
}

impl Rate {
    /// The rate a case label names, as `Display` writes it (`5000/s`, `5000/s-constant`).
    pub(crate) fn from_label(s: &str) -> Option<Rate> {
        let (n, arrivals) = match s.strip_suffix("/s-constant") {
            Some(n) => (n, Arrivals::Constant),
            None => (s.strip_suffix("/s")?, Arrivals::Poisson),
        };
        let per_sec = n.parse().ok().filter(|n| (1..=MAX_RATE).contains(n))?;
        Some(Rate { per_sec, arrivals })
    }
}

/// One `--rate` value: ops per second per fork, or a share of the case's own closed-loop
/// throughput, measured first in the same run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Ops per second per fork.
    PerSec(u64),
    /// Percent of the case's closed-loop ops/s (`80%`).
    Share(u32),
}

impl fmt::Display for Load {
    /// `5000`, or `80%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Load::PerSec(n) => write!(f, "{n}"),
            Load::Share(p) => write!(f, "{p}%"),
        }
    }
}

/// The most a share may ask: twice the closed-loop throughput shows the overload past the knee.
pub(crate) const MAX_SHARE_PCT: u32 = 200;

/// Parses a `--rate` value: `80%` of the case's closed-loop throughput, or ops per second as
/// [`parse_per_sec`] reads them.
pub(crate) fn parse_load(s: &str) -> Result<Load, String> {
    let Some(pct) = s.trim().strip_suffix('%') else { return parse_per_sec(s).map(Load::PerSec) };
    match pct.trim().parse::<u32>() {
        Ok(p) if (1..=MAX_SHARE_PCT).contains(&p) => Ok(Load::Share(p)),
        _ => Err(format!(
            "'{s}': a share of the case's closed-loop throughput is a whole percentage from 1% to {MAX_SHARE_PCT}%, e.g. 80%"
        )),
    }
}

/// Parses a `--rate` value: ops per second as a whole number, with an optional `k` or `M`
/// (`5000`, `5k`, `2.5k`, `1M`); zero, negative, fractional and absurd rates are refused.
pub(crate) fn parse_per_sec(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (number, scale) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (t, 1.0),
        },
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a rate: give ops per second per fork, e.g. 5000, 5k or 1M"))?;
    let per_sec = value * scale;
    if !per_sec.is_finite() || per_sec < 1.0 {
        return Err(format!("'{s}': a rate is at least 1 op per second per fork; give e.g. 5000"));
    }
    if per_sec.fract() != 0.0 {
        return Err(format!("'{s}': give a whole number of ops per second, e.g. {}", per_sec.round().max(1.0)));
    }
    if per_sec > MAX_RATE as f64 {
        return Err(format!(
            "'{s}' ops per second per fork is more than the clock can schedule (at most {MAX_RATE}, one op every 100 ns): lower --rate"
        ));
    }
    Ok(per_sec as u64)
}

/// The intended start times of one measurer's ops in one iteration, as nanoseconds after it
/// began: exactly the rate's share of ops for the iteration's length (a fractional op is
/// scheduled with that chance), so every fork carries the load it was asked for. Poisson
/// arrivals are a Poisson process given that count: uniform times in order, drawn one after
/// another by the spacings of uniform order statistics, so no list is held; locally their gaps
/// are exponential with the rate's mean. Constant arrivals sit at the middles of equal slots.
#[derive(Debug)]
pub(crate) struct Schedule {
    per_sec: f64,
    arrivals: Arrivals,
    rng: Xoshiro256PlusPlus,
    /// The iteration's length in nanoseconds.
    time: f64,
    /// Ops this iteration schedules, and how many it has.
    count: u64,
    given: u64,
    /// The last op's place in the iteration, from 0 to 1.
    at: f64,
}

impl Schedule {
    /// A schedule of `per_sec` ops per second (this measurer's share), seeded so that a fork
    /// can be run again with the same arrivals.
    pub(crate) fn new(per_sec: f64, arrivals: Arrivals, seed: u64) -> Schedule {
        let rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        Schedule { per_sec, arrivals, rng, time: 0.0, count: 0, given: 0, at: 0.0 }
    }

    /// Starts an iteration of `time_nanos`, the random stream continuing.
    pub(crate) fn start(&mut self, time_nanos: u64) {
        self.time = time_nanos as f64;
        let expected = self.per_sec * self.time / 1e9;
        let extra = self.rng.random::<f64>() < expected.fract();
        self.count = expected.floor() as u64 + u64::from(extra);
        self.given = 0;
        self.at = 0.0;
    }

    /// Ops this iteration schedules.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The next op's intended offset in nanoseconds; `None` once the iteration's ops are given.
    pub(crate) fn next_offset(&mut self) -> Option<u64> {
        if self.given == self.count {
            return None;
        }
        self.given += 1;
        self.at = match self.arrivals {
            Arrivals::Constant => (self.given as f64 - 0.5) / self.count as f64,
            Arrivals::Poisson => {
                // The next of `left` uniform points in order: the minimum of `left` uniforms
                // on (at, 1) is at + (1 - at)(1 - V^(1/left)).
                let left = (self.count - self.given + 1) as f64;
                let v = 1.0 - self.rng.random::<f64>();
                self.at + (1.0 - self.at) * (1.0 - v.powf(1.0 / left))
            }
        };
        Some((self.at * self.time) as u64)
    }
}

/// The seed of measurer `measurer`'s schedule in fork `fork`: distinct per fork and measurer,
/// the same on every run.
pub(crate) fn seed(fork: u32, measurer: usize) -> u64 {
    // SplitMix64's finalizer spreads the pair over the seed space.
    let mut z = (u64::from(fork) << 32 | measurer as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod load_tests {
    use super::*;

    #[test]
    fn a_share_is_a_whole_percentage_and_anything_else_a_rate() {
        assert_eq!(parse_load("80%"), Ok(Load::Share(80)));
        assert_eq!(parse_load("5k"), Ok(Load::PerSec(5000)));
        for bad in ["0%", "201%", "12.5%", "x%", "-5%"] {
            assert!(parse_load(bad).unwrap_err().contains("whole percentage from 1%"), "{bad}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_suffixes_and_bad_ones_say_why() {
        assert_eq!(parse_per_sec("5000"), Ok(5000));
        assert_eq!(parse_per_sec("5k"), Ok(5000));
        assert_eq!(parse_per_sec("2.5k"), Ok(2500));
        assert_eq!(parse_per_sec("1M"), Ok(1_000_000));
        for bad in ["0", "-5", "0.5", "abc", "", "nan", "inf"] {
            assert!(parse_per_sec(bad).is_err(), "{bad}");
        }
        assert!(parse_per_sec("1.5").unwrap_err().contains("whole number"));
        assert!(parse_per_sec("1e12").unwrap_err().contains("lower --rate"));
        assert!(parse_per_sec("0").unwrap_err().contains("at least 1"));
    }

    fn offsets(s: &mut Schedule, time: u64) -> Vec<u64> {
        s.start(time);
        std::iter::from_fn(|| s.next_offset()).collect()
    }

    #[test]
    fn constant_arrivals_sit_in_the_middle_of_equal_slots() {
        let mut s = Schedule::new(1000.0, Arrivals::Constant, 1);
        assert_eq!(offsets(&mut s, 3_000_000), [500_000, 1_500_000, 2_500_000]);
        assert_eq!(s.count(), 3);
        assert_eq!(offsets(&mut s, 1_000_000), [500_000], "a new iteration starts again");
    }

    #[test]
    fn an_iteration_schedules_the_rate_s_share_exactly_and_a_fraction_by_chance() {
        let mut s = Schedule::new(2000.0, Arrivals::Poisson, 3);
        assert_eq!(offsets(&mut s, 500_000_000).len(), 1000);
        // 2.5 ops expected: 2 or 3, 2.5 on average.
        let counts: Vec<usize> = (0..2000).map(|_| offsets(&mut s, 1_250_000).len()).collect();
        assert!(counts.iter().all(|&n| n == 2 || n == 3));
        let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
        assert!((mean - 2.5).abs() < 0.05, "{mean}");
    }

    #[test]
    fn poisson_offsets_rise_within_the_iteration_with_exponential_gaps() {
        // Given their count, Poisson arrivals are uniform: gaps of mean and sd 1/rate.
        let mut s = Schedule::new(10_000.0, Arrivals::Poisson, 7);
        let all = offsets(&mut s, 20_000_000_000);
        assert_eq!(all.len(), 200_000);
        assert!(all.windows(2).all(|w| w[0] <= w[1]) && *all.last().unwrap() < 20_000_000_000);
        let gaps: Vec<f64> = all.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!((mean / 100_000.0 - 1.0).abs() < 0.01, "{mean}");
        assert!((sd / 100_000.0 - 1.0).abs() < 0.02, "{sd}");
        // Uniform: a quarter of the ops in each quarter of the iteration.
        let first = all.iter().filter(|&&t| t < 5_000_000_000).count() as f64;
        assert!((first / 50_000.0 - 1.0).abs() < 0.02, "{first}");
    }

    #[test]
    fn a_seed_repeats_its_arrivals_and_seeds_differ() {
        let draw = |seed| offsets(&mut Schedule::new(1000.0, Arrivals::Poisson, seed), 5_000_000);
        assert_eq!(draw(seed(3, 1)), draw(seed(3, 1)));
        assert_ne!(draw(seed(3, 1)), draw(seed(3, 2)));
        assert_ne!(seed(0, 1), seed(1, 0));
    }

    #[test]
    fn a_rate_displays_its_arrivals_only_when_constant() {
        assert_eq!(Rate { per_sec: 5000, arrivals: Arrivals::Poisson }.to_string(), "5000/s");
        assert_eq!(Rate { per_sec: 5, arrivals: Arrivals::Constant }.to_string(), "5/s-constant");
    }
}
