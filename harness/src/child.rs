//! One `harness run` of a harness binary (this one, or a commit's build) as a typed
//! invocation: its flags are fields, the command line is made in one place ([`ChildRun::argv`]),
//! and spawning, redacting its stderr and quoting the tail of it on failure happen in one
//! place ([`ChildRun::run`]). `explain` reruns a case with it, `bisect` runs each commit's case,
//! and a history's backfill runs each commit.
//!
//! A commit's harness may be older than a flag: each flag says whether it can be dropped
//! (it only asks for a check an older harness does not make) or is needed (the run is refused,
//! naming the flag).

use crate::error::{BadInput, Classify, Exit};
use crate::report::Report;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which cases the child runs: configurations, filters, params, as `harness run` takes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Selection {
    /// Configurations.
    pub configs: Vec<String>,
    /// `-f` patterns.
    pub filters: Vec<String>,
    /// `-p NAME=V` values, as given.
    pub params: Vec<String>,
    /// `--hidden`.
    pub hidden: bool,
}

/// How long and how often the child's timed forks run; `None` fields are the child's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Timing {
    /// `--forks N`.
    pub forks: Option<u32>,
    /// `--warmup N`.
    pub warmup: Option<u32>,
    /// `--iterations N`.
    pub iterations: Option<u32>,
    /// `--time D`.
    pub time: Option<Duration>,
    /// `--warmup-time D`.
    pub warmup_time: Option<Duration>,
    /// `--threads N`.
    pub threads: Option<u32>,
    /// `--rate N` (and `--arrivals constant`): open loop at this rate.
    pub rate: Option<crate::rate::Rate>,
}

impl Timing {
    /// One short timed fork: for a run whose point is a counting fork (a run needs a timed one).
    pub(crate) const BRIEF: Timing = Timing {
        forks: Some(1),
        warmup: Some(0),
        iterations: Some(1),
        time: Some(Duration::from_millis(1)),
        warmup_time: None,
        threads: None,
        rate: None,
    };

    /// A few short timed iterations: for a run whose point is what its ops allocate (each
    /// iteration's own allocations are amortised over its ops, so not one op of 1 ms).
    pub(crate) const ALLOC_COUNT: Timing = Timing {
        forks: Some(1),
        warmup: Some(1),
        iterations: Some(3),
        time: Some(Duration::from_millis(100)),
        warmup_time: Some(Duration::from_millis(100)),
        threads: None,
        rate: None,
    };
}

/// The counting fork the child adds per case.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Counting {
    /// None.
    None,
    /// `--instructions`, with `--instr-ops`, `--cache-sim` and `--callgrind-dir`.
    Instructions {
        /// `--instr-ops N`.
        ops: Option<u64>,
        /// `--cache-sim`.
        cache_sim: bool,
        /// `--callgrind-dir DIR`: keep the dumps.
        keep: Option<PathBuf>,
    },
    /// `--io`.
    Io,
    /// `--instructions --io`: both counting forks, with the child's defaults.
    InstructionsAndIo,
    /// `--alloc`: the timed forks count allocations.
    Alloc,
}

/// An A/B run's flags: the other build and how the pairs decide.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pairs {
    /// `--baseline-bin PATH`.
    pub baseline: PathBuf,
    /// `--forks auto --max-forks N` (else the timing's `--forks`).
    pub auto_max_forks: Option<u32>,
    /// `--alpha`.
    pub alpha: Option<f64>,
    /// `--noise-band PCT`.
    pub noise_band: Option<f64>,
    /// `--layouts K`.
    pub layouts: Option<u32>,
    /// `--layout-check off`: no instruction forks for the decided cases.
    pub no_layout_check: bool,
}

impl Pairs {
    /// Pairs against `baseline` with the child's defaults, and no layout check: for a run whose
    /// point is its counting forks.
    pub(crate) fn against(baseline: &Path) -> Pairs {
        Pairs {
            baseline: baseline.to_path_buf(),
            auto_max_forks: None,
            alpha: None,
            noise_band: None,
            layouts: None,
            no_layout_check: true,
        }
    }
}

/// One `harness run` of `binary`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChildRun {
    /// The harness binary.
    pub binary: PathBuf,
    /// The cases.
    pub select: Selection,
    /// `--redis-url`.
    pub redis_url: String,
    /// `--database-url`.
    pub database_url: String,
    /// The timed forks.
    pub timing: Timing,
    /// The counting fork.
    pub counting: Counting,
    /// An A/B run's other build.
    pub pairs: Option<Pairs>,
    /// `--out`: the report.
    pub out: PathBuf,
    /// What the run is, for its error (`the rerun of sql/x`, `commit 1a2b3c`).
    pub what: String,
}

/// One flag of the command line and whether an older harness may run without it.
#[derive(Debug, Clone, PartialEq)]
struct Flag {
    name: &'static str,
    values: Vec<OsString>,
    /// Only asks the child to leave something out: an older harness that lacks it is run without.
    droppable: bool,
}

impl Flag {
    fn on(name: &'static str) -> Flag {
        Flag { name, values: vec![], droppable: false }
    }

    fn with(name: &'static str, value: impl Into<OsString>) -> Flag {
        Flag { name, values: vec![value.into()], droppable: false }
    }
}

/// A `harness run` that did not give its report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChildError {
    /// The binary could not be started.
    #[error("{what}: cannot run {binary}: {error}")]
    Spawn {
        /// The run.
        what: String,
        /// The binary.
        binary: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The binary is older than a flag the run needs.
    #[error("{what}: {binary} is a harness older than {flag}, which this run needs: use a later commit")]
    TooOld {
        /// The run.
        what: String,
        /// The binary.
        binary: PathBuf,
        /// The flag.
        flag: &'static str,
    },
    /// It ran and failed.
    #[error("{what} failed ({status}): {}", tail.join(" | "))]
    Failed {
        /// The run.
        what: String,
        /// How it ended.
        status: std::process::ExitStatus,
        /// The last lines of its stderr, redacted.
        tail: Vec<String>,
    },
    /// Its report cannot be read.
    #[error("{what}: {error}")]
    Report {
        /// The run.
        what: String,
        /// Why its report cannot be read.
        error: BadInput,
    },
}

impl Classify for ChildError {
    fn exit(&self) -> Exit {
        match self {
            ChildError::TooOld { .. } => Exit::BadInput,
            _ => Exit::Failed,
        }
    }
}

/// Lines of a failed child's stderr quoted in its error.
const TAIL_LINES: usize = 8;

impl ChildRun {
    /// A run of `binary` of `select` into `out`, with the child's defaults for the rest.
    pub(crate) fn new(binary: &Path, select: Selection, urls: (&str, &str), out: &Path, what: String) -> ChildRun {
        ChildRun {
            binary: binary.to_path_buf(),
            select,
            database_url: urls.0.to_string(),
            redis_url: urls.1.to_string(),
            timing: Timing::default(),
            counting: Counting::None,
            pairs: None,
            out: out.to_path_buf(),
            what,
        }
    }

    /// Every flag, in the order the command line gives them.
    fn flags(&self) -> Vec<Flag> {
        let s = &self.select;
        let mut f: Vec<Flag> = s.filters.iter().map(|p| Flag::with("-f", p)).collect();
        f.extend(s.params.iter().map(|p| Flag::with("-p", p)));
        if s.hidden {
            f.push(Flag::on("--hidden"));
        }
        f.extend(self.timing_flags());
        f.extend(self.counting_flags());
        f.extend(self.pair_flags());
        f.push(Flag::with("--redis-url", &self.redis_url));
        f.push(Flag::with("--database-url", &self.database_url));
        f.push(Flag::on("--quiet"));
        f.push(Flag::with("--out", &self.out));
        f
    }

    fn timing_flags(&self) -> Vec<Flag> {
        let t = &self.timing;
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let forks = t.forks.filter(|_| self.pairs.as_ref().is_none_or(|p| p.auto_max_forks.is_none()));
        let constant = t.rate.filter(|r| r.arrivals == crate::rate::Arrivals::Constant);
        [
            t.rate.map(|r| Flag::with("--rate", r.per_sec.to_string())),
            constant.map(|_| Flag::with("--arrivals", "constant")),
            t.threads.map(|n| Flag::with("--threads", n.to_string())),
            forks.map(|n| Flag::with("--forks", n.to_string())),
            t.iterations.map(|n| Flag::with("--iterations", n.to_string())),
            t.warmup.map(|n| Flag::with("--warmup", n.to_string())),
            t.time.map(|d| Flag::with("--time", ms(d))),
            t.warmup_time.map(|d| Flag::with("--warmup-time", ms(d))),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    fn counting_flags(&self) -> Vec<Flag> {
        match &self.counting {
            Counting::None => vec![],
            Counting::Io => vec![Flag::on("--io")],
            Counting::Alloc => vec![Flag::on("--alloc")],
            Counting::InstructionsAndIo => vec![Flag::on("--instructions"), Flag::on("--io")],
            Counting::Instructions { ops, cache_sim, keep } => {
                let mut f = vec![Flag::on("--instructions")];
                f.extend(ops.map(|n| Flag::with("--instr-ops", n.to_string())));
                if *cache_sim {
                    f.push(Flag::on("--cache-sim"));
                }
                f.extend(keep.as_ref().map(|dir| Flag::with("--callgrind-dir", dir)));
                f
            }
        }
    }

    fn pair_flags(&self) -> Vec<Flag> {
        let Some(p) = &self.pairs else { return vec![] };
        let mut f = vec![];
        if let Some(max) = p.auto_max_forks {
            f.extend([Flag::with("--forks", "auto"), Flag::with("--max-forks", max.to_string())]);
        }
        if p.no_layout_check {
            f.push(Flag { droppable: true, ..Flag::with("--layout-check", "off") });
        }
        f.extend(p.alpha.map(|a| Flag::with("--alpha", a.to_string())));
        f.extend(p.noise_band.map(|b| Flag::with("--noise-band", b.to_string())));
        f.push(Flag::with("--baseline-bin", &p.baseline));
        f.extend(p.layouts.map(|k| Flag::with("--layouts", k.to_string())));
        f
    }

    /// The command line after the binary, for a harness that knows every flag of `known`
    /// (`None`: assume it knows them all); a needed flag it does not know is an error.
    fn argv_for(&self, known: Option<&str>) -> Result<Vec<OsString>, ChildError> {
        let mut argv: Vec<OsString> = vec!["run".into()];
        argv.extend(self.select.configs.iter().map(OsString::from));
        for flag in self.flags() {
            let knows = known.is_none_or(|help| flag.name.len() < 3 || help.contains(flag.name));
            if !knows && flag.droppable {
                continue;
            }
            if !knows {
                return Err(ChildError::TooOld {
                    what: self.what.clone(),
                    binary: self.binary.clone(),
                    flag: flag.name,
                });
            }
            argv.push(flag.name.into());
            argv.extend(flag.values);
        }
        Ok(argv)
    }

    /// The flags that change what the run measures: every flag but the servers' URLs (which
    /// may hold secrets), `--quiet` and `--out`.
    pub(crate) fn settings_argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = self.select.configs.iter().map(OsString::from).collect();
        for flag in self.flags() {
            if !matches!(flag.name, "--redis-url" | "--database-url" | "--quiet" | "--out") {
                argv.push(flag.name.into());
                argv.extend(flag.values);
            }
        }
        argv
    }

    /// The command line after the binary.
    #[cfg(test)]
    pub(crate) fn argv(&self) -> Vec<OsString> {
        self.argv_for(None).expect("every flag is known when none is checked")
    }

    /// The flags `binary run --help` lists, or `None` when it does not answer.
    fn known_flags(&self) -> Option<String> {
        let help = std::process::Command::new(&self.binary)
            .args(["run", "--help"])
            .stdin(std::process::Stdio::null())
            .output()
            .ok()?;
        help.status.success().then(|| String::from_utf8_lossy(&help.stdout).into_owned())
    }

    /// Runs it and reads its report.
    pub(crate) fn run(&self) -> Result<Report, ChildError> {
        let argv = self.argv_for(self.known_flags().as_deref())?;
        let mut command = std::process::Command::new(&self.binary);
        command.args(&argv).stdin(std::process::Stdio::null());
        // Ctrl-C is passed on: the child writes its report `interrupted` and removes its
        // worker's leftovers before it exits.
        let (done, _) = crate::interrupt::output(&mut command, false).map_err(|error| ChildError::Spawn {
            what: self.what.clone(),
            binary: self.binary.clone(),
            error,
        })?;
        if !done.status.success() {
            let stderr = workloads::redact::redact(&String::from_utf8_lossy(&done.stderr));
            let lines: Vec<String> =
                stderr.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
            let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].to_vec();
            return Err(ChildError::Failed { what: self.what.clone(), status: done.status, tail });
        }
        crate::report::read::read_report(&self.out, "the run's")
            .map_err(|error| ChildError::Report { what: self.what.clone(), error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> ChildRun {
        let select = Selection {
            configs: vec!["smoke".into()],
            filters: vec!["^baseline/noop$".into()],
            params: vec!["work=1".into()],
            hidden: true,
        };
        ChildRun::new(
            Path::new("/bin/harness"),
            select,
            ("postgres://db", "redis://r"),
            Path::new("o.json"),
            "t".into(),
        )
    }

    fn text(argv: &[OsString]) -> String {
        argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn the_command_line_has_every_field_once_in_order() {
        let mut r = run();
        r.timing = Timing::BRIEF;
        r.counting = Counting::Instructions { ops: Some(7), cache_sim: true, keep: Some("dumps".into()) };
        assert_eq!(
            text(&r.argv()),
            "run smoke -f ^baseline/noop$ -p work=1 --hidden --forks 1 --iterations 1 --warmup 0 --time 1ms \
             --instructions --instr-ops 7 --cache-sim --callgrind-dir dumps \
             --redis-url redis://r --database-url postgres://db --quiet --out o.json"
        );
    }

    #[test]
    fn an_open_loop_run_carries_its_rate_and_constant_arrivals() {
        use crate::rate::{Arrivals, Rate};
        let mut r = run();
        r.timing = Timing {
            forks: Some(4),
            rate: Some(Rate { per_sec: 800, arrivals: Arrivals::Poisson }),
            ..Timing::default()
        };
        assert!(text(&r.argv()).contains("--hidden --rate 800 --forks 4 --redis-url"), "{}", text(&r.argv()));
        r.timing.rate = Some(Rate { per_sec: 800, arrivals: Arrivals::Constant });
        assert!(text(&r.argv()).contains("--rate 800 --arrivals constant --forks 4"), "{}", text(&r.argv()));
    }

    #[test]
    fn an_older_harness_runs_without_a_droppable_flag_and_refuses_a_needed_one() {
        let mut r = run();
        r.timing = Timing { forks: Some(3), ..Timing::default() };
        r.pairs = Some(Pairs {
            baseline: "good".into(),
            auto_max_forks: Some(30),
            alpha: Some(0.01),
            noise_band: Some(2.5),
            layouts: None,
            no_layout_check: true,
        });
        let all = text(&r.argv());
        assert!(
            all.contains(
                "--forks auto --max-forks 30 --layout-check off --alpha 0.01 --noise-band 2.5 --baseline-bin good"
            ),
            "{all}"
        );
        assert!(!all.contains("--forks 3"), "auto replaces the fixed count: {all}");
        let old_help =
            "--hidden --forks --max-forks --alpha --noise-band --baseline-bin --redis-url --database-url --quiet --out";
        let old = text(&r.argv_for(Some(old_help)).unwrap());
        assert!(!old.contains("--layout-check"), "{old}");
        let err = r.argv_for(Some("--forks")).unwrap_err();
        assert!(matches!(err, ChildError::TooOld { flag: "--hidden", .. }), "{err}");
    }
}
