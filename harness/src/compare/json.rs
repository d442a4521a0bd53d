//! `compare --json`: one document per comparison, throughput or instructions, with the gate's
//! decision. Its shape is these types; `harness/schema/compare.v4.json` is generated from them
//! and CLI output is validated against it in the tests.

use schemars::JsonSchema;
use serde::Serialize;

/// Version of this document's shape.
/// 2: the test's `unit` and `runs`, each case's `runs`, and the `looks_*` verdicts of one run
/// per side (which version 1 called `faster`/`slower`).
/// 3: each A/B case's `instructions` of both builds, the `*_same_instructions` verdicts (which
/// version 2 called `faster`/`slower`) and the test's `layouts`.
/// 4: metric `io`, with each case's `io` counts of both reports and its `changes` in words.
/// 5: metric `latency`, with the test's `percentile` and `method` and each case's `missed_rate`.
pub(crate) const COMPARE_SCHEMA_VERSION: u32 = 5;

/// The whole `compare --json` document.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Document {
    /// [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `throughput`, `instructions`, `io` or `latency`.
    pub metric: &'static str,
    /// Throughput and latency: how the verdicts were tested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestSettings>,
    /// The counts of each verdict, one line.
    pub summary: String,
    /// Every compared case (only the changed ones with `--only-changed`).
    pub cases: Vec<Case>,
    /// What the gate decided.
    pub decision: Decision,
}

/// How a throughput comparison tested.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TestSettings {
    /// Fork pairs of one A/B report (paired t) or separate reports (Welch's t).
    pub paired: bool,
    /// The unit of replication: `fork_pair` (A/B report), `run` (2+ runs per side) or `fork`
    /// (one run per side, whose differences are only `looks_slower`/`looks_faster`).
    pub unit: &'static str,
    /// Reports on each side (1 and 1 for an A/B report).
    pub runs: [usize; 2],
    /// The overall false-alarm rate asked for.
    pub alpha: f64,
    /// The level each test ran at (below alpha after repeated looks with `--forks auto`).
    pub level: f64,
    /// Differences within ±this percent are "no change".
    pub noise_band_pct: f64,
    /// Separate reports: new/base of the drift canary.
    pub canary_ratio: Option<f64>,
    /// The canary moved beyond the noise band: the machine, not only the code, changed.
    pub machine_changed: bool,
    /// A/B reports with `--layouts K`: the code-layout variants per build (the test's unit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layouts: Option<u32>,
    /// Latency: the percentile compared (`p50`, `p99`, `p99.9`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<&'static str>,
    /// Latency, A/B reports: `paired_t` or `bootstrap`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'static str>,
}

/// Instructions per op of both builds of an A/B case.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct InstructionPair {
    /// The baseline build's.
    pub base: f64,
    /// This build's.
    pub new: f64,
    /// new/base.
    pub ratio: f64,
}

/// The I/O counts of a case in both reports (`--metric io`).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct IoPair {
    /// The base report's.
    pub base: Option<crate::report::io::IoSummary>,
    /// The new report's.
    pub new: Option<crate::report::io::IoSummary>,
}

/// One case.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Case {
    /// `name[params]`.
    pub benchmark: String,
    /// The metric in the base report (ops/s, or instructions per op).
    pub base: Option<f64>,
    /// The metric in the new report.
    pub new: Option<f64>,
    /// Throughput: new/base, the test's estimate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Throughput: the interval's lower end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    /// Throughput: the interval's upper end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// Throughput: the test's p-value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Throughput: ok timed forks in base and new (latency: those that kept the rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forks: Option<[usize; 2]>,
    /// Latency: ok forks in base and new that did not keep the rate (left out of the test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed_rate: Option<[usize; 2]>,
    /// Throughput, several runs per side: the runs with data in base and new.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<[usize; 2]>,
    /// Throughput, A/B reports: new/base of each fork pair.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<f64>,
    /// Throughput, A/B reports: both builds' instructions per op, where both were counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionPair>,
    /// Instructions: (new - base) / base in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_pct: Option<f64>,
    /// Instructions: the threshold applied, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_pct: Option<f64>,
    /// Instructions: false when the workload's counts vary run to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deterministic: Option<bool>,
    /// I/O: both reports' counts (`base` and `new` above are round trips per op).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoPair>,
    /// I/O: what changed per op, in words, worst first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// The verdict as a token: `faster`, `slower`, `faster_same_instructions`,
    /// `slower_same_instructions`, `looks_faster`, `looks_slower`, `no_change`,
    /// `within_band`, `too_few_forks`, `regressed`, `improved`, `unchanged`, `missing`, `extra`, `no_data`.
    pub verdict: &'static str,
    /// The verdict as the table says it.
    pub text: String,
}

/// The gate's decision: the exit code `compare` ends with and why.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Decision {
    /// 0 pass, 2 could not be tested, 3 a case fails the gate.
    pub exit_code: u8,
    /// Cases that fail the gate (slower or regressed, or missing from new).
    pub failing: Vec<String>,
    /// Cases that could not be tested with `--fail-on-regression` (exit 2).
    pub untested: Vec<String>,
    /// `--warn-only` turned a failure into exit 0.
    pub warn_only: bool,
}

impl Case {
    /// A case with only the common fields set.
    pub(crate) fn new(
        benchmark: String,
        base: Option<f64>,
        new: Option<f64>,
        verdict: &'static str,
        text: String,
    ) -> Case {
        Case {
            benchmark,
            base,
            new,
            ratio: None,
            lower: None,
            upper: None,
            p_value: None,
            forks: None,
            missed_rate: None,
            runs: None,
            pairs: vec![],
            instructions: None,
            delta_pct: None,
            threshold_pct: None,
            deterministic: None,
            io: None,
            changes: vec![],
            verdict,
            text,
        }
    }

    /// The case with a fork-level test's fields: its ratio, interval and p-value, the forks
    /// that entered it, the runs per side, each fork pair's ratio and both builds'
    /// instructions per op (throughput and latency write the same fields).
    pub(crate) fn with_fork_test(
        self,
        test: Option<&crate::stats::fork_test::ForkTest>,
        forks: (usize, usize),
        runs: Option<(usize, usize)>,
        pairs: &[f64],
        instructions: Option<(f64, f64)>,
    ) -> Case {
        Case {
            ratio: test.map(|t| t.ratio),
            lower: test.map(|t| t.lower),
            upper: test.map(|t| t.upper),
            p_value: test.map(|t| t.p_value),
            forks: Some([forks.0, forks.1]),
            runs: runs.map(|(b, n)| [b, n]),
            pairs: pairs.to_vec(),
            instructions: instructions.map(|(base, new)| InstructionPair { base, new, ratio: new / base }),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    /// The committed schema must equal the one generated from these types.
    /// Regenerate with `UPDATE_SCHEMA=1 cargo test -p harness schema`.
    #[test]
    fn committed_compare_schema_matches_the_types() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/compare.v5.json");
        let generated = serde_json::to_string_pretty(&schemars::schema_for!(super::Document)).unwrap() + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(committed == generated, "{} is stale: UPDATE_SCHEMA=1 cargo test -p harness schema", path.display());
    }
}
