//! What the user sees while a run goes on: a progress bar on a terminal, plain lines otherwise,
//! nothing with `--quiet` (failures are always printed).

use crate::format::si;
use crate::protocol::{IterationKind, Message};
use crate::report::{Fork, ForkKind, ForkStatus, Iteration};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// How progress is shown, and where each running stepped fork stands.
#[derive(Debug)]
pub(crate) struct Progress {
    view: View,
    /// Stepped forks (workloads measured in steps) by label: their ETA comes from their steps.
    stepped: std::cell::RefCell<std::collections::BTreeMap<String, Steps>>,
}

/// A running stepped fork: ops planned and done, and steps.
#[derive(Debug)]
struct Steps {
    total_ops: u64,
    done_ops: u64,
    steps: usize,
    done: usize,
}

impl Steps {
    /// `step 3/42, 12% of ops, 1.2 Mtable_rows, 210 k ops/s, fork ETA 4m 10s`: the ETA at
    /// the last step's rate (an underestimate when the rate keeps falling).
    fn advance(&mut self, ops: u64, nanos: u64, observed: &std::collections::BTreeMap<String, i64>) -> String {
        self.done_ops += ops;
        self.done += 1;
        let rate = if nanos == 0 { f64::NAN } else { ops as f64 * 1e9 / nanos as f64 };
        let left = (self.total_ops.saturating_sub(self.done_ops)) as f64 / rate;
        let eta = if left.is_finite() {
            humantime::format_duration(std::time::Duration::from_secs(left.round() as u64)).to_string()
        } else {
            "unknown".into()
        };
        let rows = observed.get("table_rows").map_or(String::new(), |r| format!(", {} table rows", si(*r as f64)));
        format!(
            "step {}/{}{rows}, {} ops/s, {:.0}% of the fork's ops, fork ETA {eta}",
            self.done,
            self.steps,
            si(rate),
            100.0 * self.done_ops as f64 / self.total_ops.max(1) as f64
        )
    }
}

/// What an undecided `--forks auto` case has left: the pairs it likely needs (from its interval,
/// [`crate::stats::sequential::pairs_left`]) and at most (the budget), at its pace so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeLeft {
    /// Pairs it likely needs.
    pub pairs: usize,
    /// Pairs the budget has left.
    pub budget: usize,
    /// Wall time of one pair so far.
    pub per_pair: std::time::Duration,
}

impl std::fmt::Display for TimeLeft {
    /// `about 3 more pairs (~2s), at most 25 (~17s)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let time = |pairs: usize| crate::format::whole_seconds(self.per_pair.as_secs_f64() * pairs as f64);
        let s = if self.pairs == 1 { "" } else { "s" };
        write!(f, "about {} more pair{s} (~{})", self.pairs, time(self.pairs))?;
        if self.budget > self.pairs {
            write!(f, ", at most {} (~{})", self.budget, time(self.budget))?;
        }
        Ok(())
    }
}

/// Where progress goes.
#[derive(Debug)]
enum View {
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
        Progress { view: View::new(quiet, total), stepped: Default::default() }
    }

    /// A fork is starting.
    pub(crate) fn fork_started(&self, label: &str, fork: u32, forks: u32) {
        self.stepped.borrow_mut().remove(label);
        self.view.fork_started(label, fork, forks);
    }

    /// A worker message arrived: a stepped fork's steps and each step's ETA, or an iteration.
    pub(crate) fn message(&self, label: &str, m: &Message) {
        match m {
            Message::Calibrated { steps: Some(steps), .. } => {
                let s = Steps { total_ops: steps.iter().sum(), done_ops: 0, steps: steps.len(), done: 0 };
                self.stepped.borrow_mut().insert(label.to_string(), s);
            }
            Message::Iteration { ops, nanos, observed, .. } => {
                let line = self.stepped.borrow_mut().get_mut(label).map(|s| s.advance(*ops, *nanos, observed));
                match (&self.view, line) {
                    (_, None) => self.view.message(label, m),
                    (View::Bar(b), Some(line)) => b.set_message(format!("{label} {line}")),
                    (View::Lines { .. }, Some(line)) => say!("{label} {line}"),
                    (View::Quiet, Some(_)) => {}
                }
            }
            _ => self.view.message(label, m),
        }
    }

    /// A fork ended.
    pub(crate) fn fork_finished(&self, label: &str, fork: &Fork, forks: u32) {
        self.stepped.borrow_mut().remove(label);
        self.view.fork_finished(label, fork, forks);
    }

    /// `--forks auto`: where a case stands after `pairs` fork pairs, and (still undecided) the
    /// time it has left.
    pub(crate) fn interval(&self, standing: &Standing<'_>) {
        self.view.interval(standing);
    }

    /// A warning or failure, shown in every mode.
    pub(crate) fn warn(&self, text: &str) {
        self.view.warn(text);
    }

    /// The run ended.
    pub(crate) fn finish(&self) {
        self.view.finish();
    }
}

/// Where a `--forks auto` case stands after some fork pairs.
pub(crate) struct Standing<'a> {
    /// The case.
    pub label: &'a str,
    /// Fork pairs run so far.
    pub pairs: usize,
    /// The test over them, once there is one.
    pub test: Option<&'a crate::stats::fork_test::ForkTest>,
    /// Why the case stops, once it does.
    pub stop: Option<crate::stats::sequential::SequentialStop>,
    /// The time the case has left.
    pub left: &'a TimeLeft,
}

impl View {
    fn new(quiet: bool, total: u64) -> View {
        if quiet {
            View::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} forks, ETA {eta}  {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            View::Bar(bar)
        } else {
            View::Lines { total, done: std::cell::Cell::new(0) }
        }
    }

    /// A fork is starting.
    fn fork_started(&self, label: &str, fork: u32, forks: u32) {
        if let View::Bar(b) = self {
            b.set_message(format!("{label} fork {}/{forks}: starting", fork + 1));
        }
    }

    /// A worker message arrived.
    fn message(&self, label: &str, m: &Message) {
        if let (View::Bar(b), Message::Iteration { kind, index, ops, nanos, .. }) = (self, m) {
            let what = if *kind == IterationKind::Warmup { "warmup" } else { "iteration" };
            let rate = if *nanos == 0 { f64::NAN } else { *ops as f64 * 1e9 / *nanos as f64 };
            b.set_message(format!("{label} {what} {}: {} ops/s", index + 1, si(rate)));
        }
    }

    /// A fork ended.
    fn fork_finished(&self, label: &str, fork: &Fork, forks: u32) {
        match self {
            View::Bar(b) => b.inc(1),
            View::Lines { total, done } => {
                done.set(done.get() + 1);
                let status = if fork.status == ForkStatus::Ok { "ok" } else { "FAILED" };
                let figure = match (fork.kind, fork.instructions) {
                    (ForkKind::Instructions, Some(count)) => format!("{:.1} instructions/op", count.per_op()),
                    (ForkKind::Instructions, None) => "no count".into(),
                    (ForkKind::Io, _) => fork.io.as_ref().map_or("no count".into(), |io| {
                        let (trips, statements) = (io.per_op(io.round_trips), io.per_op(io.statements_total()));
                        format!("{trips:.2} round trips/op, {statements:.2} statements/op")
                    }),
                    (ForkKind::Time, _) => {
                        let rates: Vec<f64> = fork.iterations.iter().map(Iteration::ops_per_sec).collect();
                        if rates.is_empty() {
                            "no iteration".into()
                        } else {
                            format!("{} ops/s", si(rates.iter().sum::<f64>() / rates.len() as f64))
                        }
                    }
                };
                say!("[{}/{total}] {label} fork {}/{forks}: {status}, {figure}", done.get(), fork.index + 1);
            }
            View::Quiet => {}
        }
    }

    /// `--forks auto`: where a case stands after `pairs` fork pairs.
    fn interval(&self, &Standing { label, pairs, test, stop, left }: &Standing<'_>) {
        use crate::stats::sequential::SequentialStop;
        let standing = match test {
            Some(t) => format!("new/base {:.3} ({:.3}..{:.3})", t.ratio, t.lower, t.upper),
            None => "no interval yet".into(),
        };
        let what = match stop {
            None => format!("adding a pair; {left}"),
            Some(SequentialStop::OutsideBand) => "decided: outside the noise band".into(),
            Some(SequentialStop::InsideBand) => "decided: inside the noise band".into(),
            Some(SequentialStop::BudgetSpent) => "budget spent, undecided".into(),
        };
        let line = format!("{label}: {pairs} pair(s), {standing}; {what}");
        match self {
            View::Bar(b) => b.println(line),
            View::Lines { .. } => say!("{line}"),
            View::Quiet => {}
        }
    }

    /// A warning or failure, shown in every mode.
    fn warn(&self, text: &str) {
        let text = workloads::redact::redact(text);
        match self {
            View::Bar(b) => b.println(format!("warning: {text}")),
            _ => say!("warning: {text}"),
        }
    }

    /// The run ended.
    fn finish(&self) {
        if let View::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}
