//! What the user sees while a run goes on: a progress bar on a terminal, plain lines otherwise,
//! nothing with `--quiet` (failures are always printed).

use crate::format::si;
use crate::protocol::{IterationKind, Message};
use crate::report::{Fork, ForkKind, ForkStatus, Iteration};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// How progress is shown.
#[derive(Debug)]
pub(crate) enum Progress {
    /// A bar over every fork of the run.
    Bar(ProgressBar),
    /// One line per finished fork on stderr.
    Lines {
        /// Forks in the whole run.
        total: u64,
        /// Forks finished so far.
        done: std::cell::Cell<u64>,
    },
    /// Only failures.
    Quiet,
}

impl Progress {
    /// Chooses the display for a run of `total` forks.
    pub(crate) fn new(quiet: bool, total: u64) -> Progress {
        if quiet {
            Progress::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} forks, ETA {eta}  {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            Progress::Bar(bar)
        } else {
            Progress::Lines { total, done: std::cell::Cell::new(0) }
        }
    }

    /// A fork is starting.
    pub(crate) fn fork_started(&self, label: &str, fork: u32, forks: u32) {
        if let Progress::Bar(b) = self {
            b.set_message(format!("{label} fork {}/{forks}: starting", fork + 1));
        }
    }

    /// A worker message arrived.
    pub(crate) fn message(&self, label: &str, m: &Message) {
        if let (Progress::Bar(b), Message::Iteration { kind, index, ops, nanos, .. }) = (self, m) {
            let what = if *kind == IterationKind::Warmup { "warmup" } else { "iteration" };
            let rate = if *nanos == 0 { f64::NAN } else { *ops as f64 * 1e9 / *nanos as f64 };
            b.set_message(format!("{label} {what} {}: {} ops/s", index + 1, si(rate)));
        }
    }

    /// A fork ended.
    pub(crate) fn fork_finished(&self, label: &str, fork: &Fork, forks: u32) {
        match self {
            Progress::Bar(b) => b.inc(1),
            Progress::Lines { total, done } => {
                done.set(done.get() + 1);
                let status = if fork.status == ForkStatus::Ok { "ok" } else { "FAILED" };
                let figure = match (fork.kind, fork.instructions) {
                    (ForkKind::Instructions, Some(count)) => format!("{:.1} instructions/op", count.per_op()),
                    (ForkKind::Instructions, None) => "no count".into(),
                    (ForkKind::Time, _) => {
                        let rates: Vec<f64> = fork.iterations.iter().map(Iteration::ops_per_sec).collect();
                        if rates.is_empty() {
                            "no iteration".into()
                        } else {
                            format!("{} ops/s", si(rates.iter().sum::<f64>() / rates.len() as f64))
                        }
                    }
                };
                eprintln!("[{}/{total}] {label} fork {}/{forks}: {status}, {figure}", done.get(), fork.index + 1);
            }
            Progress::Quiet => {}
        }
    }

    /// `--forks auto`: where a case stands after `pairs` fork pairs.
    pub(crate) fn interval(
        &self,
        label: &str,
        pairs: usize,
        test: Option<&crate::stats::fork_test::ForkTest>,
        stop: Option<crate::stats::sequential::SequentialStop>,
    ) {
        use crate::stats::sequential::SequentialStop;
        let standing = match test {
            Some(t) => format!("new/base {:.3} ({:.3}..{:.3})", t.ratio, t.lower, t.upper),
            None => "no interval yet".into(),
        };
        let what = match stop {
            None => "adding a pair",
            Some(SequentialStop::OutsideBand) => "decided: outside the noise band",
            Some(SequentialStop::InsideBand) => "decided: inside the noise band",
            Some(SequentialStop::BudgetSpent) => "budget spent, undecided",
        };
        let line = format!("{label}: {pairs} pair(s), {standing}; {what}");
        match self {
            Progress::Bar(b) => b.println(line),
            Progress::Lines { .. } => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    /// A warning or failure, shown in every mode.
    pub(crate) fn warn(&self, text: &str) {
        match self {
            Progress::Bar(b) => b.println(format!("warning: {text}")),
            _ => eprintln!("warning: {text}"),
        }
    }

    /// The run ended.
    pub(crate) fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}
