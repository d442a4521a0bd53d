//! A case's forks and what is derived from them: adding a fork rescores the case, one build of
//! an A/B run seen alone, and the questions readers ask of a case and of a fork.

use super::{
    AT_CEILING, AllocSummary, Benchmark, CaseId, CaseSettings, Fork, ForkKind, ForkStatus, InstructionSummary, Score,
    io, latency,
};
use std::collections::BTreeMap;

impl Benchmark {
    /// Whether it has instruction or allocation counts that leave out its servers' work.
    pub(crate) fn counts_client_only(&self) -> bool {
        (self.instructions.is_some() || self.allocations.is_some()) && !self.servers.is_empty()
    }

    /// Why its score measures its scheme's limit rather than its cost, if it does.
    pub(crate) fn at_ceiling(&self) -> Option<String> {
        let (score, ceiling) = (self.score.as_ref()?, self.ops_ceiling.as_ref()?);
        (score.mean >= AT_CEILING * ceiling.ops_per_sec).then(|| {
            format!(
                "{}: {} ops/s is {:.0}% of its limit ({}): this measures the limit, not the cost",
                self.id(),
                crate::format::si(score.mean),
                100.0 * score.mean / ceiling.ops_per_sec,
                ceiling.why
            )
        })
    }
}

impl Fork {
    /// Whether it is a timed fork that finished ok: a fork whose iterations count.
    pub(crate) fn is_ok_timed(&self) -> bool {
        self.status == ForkStatus::Ok && self.kind == ForkKind::Time
    }

    /// A fork that has not reported anything yet: failed until proven ok.
    pub(crate) fn pending(index: u32, pid: Option<u32>) -> Fork {
        Fork {
            index,
            sequence: None,
            lockstep: false,
            layout: None,
            pid,
            status: ForkStatus::Failed,
            failure: None,
            batch_size: None,
            clock_read_nanos: None,
            per_op_reset: false,
            steps: None,
            kind: ForkKind::Time,
            instructions: None,
            io: None,
            hardware_counters: None,
            latency: None,
            open_loop: None,
            shape: None,
            observed: BTreeMap::new(),
            warmup: vec![],
            iterations: vec![],
            wall_nanos: 0,
        }
    }
}

impl Benchmark {
    /// Case `id` with no fork yet.
    pub(crate) fn empty(id: &CaseId, settings: CaseSettings) -> Benchmark {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let concurrency =
            (id.threads() != 1).then(|| latency::Concurrency { count: id.threads(), cores, kind: None, each: None });
        Benchmark {
            name: id.name().to_string(),
            params: id.params().clone(),
            shape: None,
            settings,
            forks: vec![],
            score: None,
            skipped: None,
            instructions: None,
            io: None,
            baseline_io: None,
            allocations: None,
            baseline_forks: vec![],
            baseline_score: None,
            baseline_instructions: None,
            op_floor_nanos: None,
            ops_ceiling: None,
            servers: vec![],
            concurrency,
            latency: None,
            rate: id.rate(),
            rate_share_pct: None,
            open_loop: None,
            sequential_stop: None,
        }
    }

    /// Its latency percentiles in ns: sampled (`--mode sample`), or an open-loop case's
    /// corrected ones (from each op's intended start).
    pub(crate) fn percentiles(&self) -> Option<&std::collections::BTreeMap<String, u64>> {
        let corrected = self.open_loop.as_ref().and_then(|o| o.corrected.as_ref()).map(|c| &c.percentiles);
        self.latency.as_ref().map(|l| &l.percentiles).or(corrected)
    }

    /// The open-loop records of its forks that kept their rate.
    pub(crate) fn kept_open_forks(&self) -> impl Iterator<Item = &super::open_loop::ForkOpenLoop> {
        super::open_loop::kept(&self.forks).map(|(_, o)| o)
    }

    /// Number of timed forks that finished ok (instruction forks are not forks of the score).
    pub(crate) fn forks_ok(&self) -> usize {
        self.forks.iter().filter(|f| f.is_ok_timed()).count()
    }

    /// Adds a fork of this build and rescores the case from all its forks; the first fork
    /// that says how the op ran (its shape) names the case's measurers.
    pub(crate) fn add_fork(&mut self, fork: Fork) {
        if self.shape.is_none() {
            self.shape = fork.shape.clone();
            if let (Some(c), Some(shape)) = (self.concurrency.as_mut(), fork.shape.as_deref()) {
                c.describe(shape);
            }
        }
        self.forks.push(fork);
        self.score = Score::from_forks(&self.forks);
        self.latency = latency::LatencySummary::from_forks(&self.forks);
        self.open_loop = self.rate.and_then(|r| super::open_loop::OpenLoopSummary::from_forks(r, &self.forks));
        self.instructions = InstructionSummary::from_forks(&self.forks);
        self.io = io::IoSummary::from_forks(&self.forks);
        self.allocations = AllocSummary::from_forks(&self.forks, !self.servers.is_empty());
    }

    /// This case as one build of its A/B run would have recorded it alone: the baseline's
    /// forks (`baseline`) or this build's, rescored; the other build's forks left out.
    pub(crate) fn one_build(&self, baseline: bool) -> Benchmark {
        let forks = if baseline { self.baseline_forks.clone() } else { self.forks.clone() };
        Benchmark {
            baseline_forks: vec![],
            baseline_score: None,
            baseline_instructions: None,
            baseline_io: None,
            ..self.with_forks(forks)
        }
    }

    /// This case with `forks` in place of its own, every figure [`Benchmark::add_fork`] derives
    /// from them derived again (none left over from the forks it had).
    pub(crate) fn with_forks(&self, forks: Vec<Fork>) -> Benchmark {
        let mut out = Benchmark {
            forks: vec![],
            score: None,
            latency: None,
            open_loop: None,
            instructions: None,
            io: None,
            allocations: None,
            shape: None,
            ..self.clone()
        };
        for fork in forks {
            out.add_fork(fork);
        }
        out
    }

    /// Adds a fork of the A/B baseline build and rescores the baseline.
    pub(crate) fn add_baseline_fork(&mut self, fork: Fork) {
        self.baseline_forks.push(fork);
        self.baseline_score = Score::from_forks(&self.baseline_forks);
        self.baseline_instructions = InstructionSummary::from_forks(&self.baseline_forks);
        self.baseline_io = io::IoSummary::from_forks(&self.baseline_forks);
    }

    /// Measuring threads or tasks of each fork (1 unless `--threads`).
    pub(crate) fn threads(&self) -> u32 {
        self.concurrency.as_ref().map_or(1, |c| c.count)
    }

    /// Its identity, from the fields the report keeps (name, params, threads): the file is the
    /// one source, so no second copy of it can disagree with them.
    pub(crate) fn id(&self) -> CaseId {
        CaseId::new(self.name.clone(), self.params.clone(), self.threads()).with_rate(self.rate)
    }

    /// Whether the case's workload is measured in steps (its forks announced steps).
    pub(crate) fn is_stepped(&self) -> bool {
        self.forks.iter().any(|f| f.steps.is_some())
    }

    /// Number of timed forks that ran, ok or not.
    pub(crate) fn timed_forks(&self) -> usize {
        self.forks.iter().filter(|f| f.kind == ForkKind::Time).count()
    }
}
