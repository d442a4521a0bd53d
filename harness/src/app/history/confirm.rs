//! `harness history confirm`: each change point `detect` finds, re-run. A throughput step of
//! adjacent commits is a paired A/B of the two builds across `--layouts K` code layouts; one
//! whose commits between were not stored is narrowed by `bisect` once the A/B confirms it. An
//! exact count's change is its commit's when the two are adjacent, else `bisect` by that count
//! finds the commit. An open-loop latency step (`open_loop.p99`) is a paired A/B at the case's
//! rate, judged on that percentile fork pair by fork pair. Every decision is stored, so a
//! second call re-runs nothing decided.

use super::{ChangePoint, Found, decision, find, short};
use crate::ab::Home;
use crate::child::{ChildRun, Counting, Pairs, Selection, Timing};
use crate::cli::{DetectFormat, HistoryConfirmArgs};
use crate::compare::latency::{self, Percentile};
use crate::compare::throughput::{Options, Verdict, compare_sides};
use crate::history::store::{Confirmation, Location, Outcome, Store};
use crate::report::{CaseId, Report};
use crate::stats::fork_test::ForkTest;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Decides every undecided change point and prints them all with their decisions.
pub(super) fn confirm(location: &Location, args: &HistoryConfirmArgs) -> anyhow::Result<ExitCode> {
    let least = crate::app::measure::DEFAULT_AUTO_FORKS.0;
    if args.max_forks < least {
        return Err(crate::error::BadInput(format!(
            "--max-forks {}: an A/B's sequential plan looks first after {least} fork pairs (`run --min-forks`); give --max-forks {least} or more",
            args.max_forks
        ))
        .into());
    }
    let layouts = args.layouts.unwrap_or(args.max_forks);
    if layouts < args.max_forks {
        return Err(crate::error::BadInput(format!(
            "--layouts {layouts} with --max-forks {}: each fork pair needs a layout of its own; give --layouts at least {0} or leave it out",
            args.max_forks
        ))
        .into());
    }
    let home = Home::of_current_checkout("harness history confirm")?;
    let mut store = Store::open(location)?;
    let found = find(&mut store, location, &args.found)?;
    let runs = home.history_runs().join("confirm");
    std::fs::create_dir_all(&runs).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", runs.display()))?;
    let mut rows: Vec<(ChangePoint, Result<Confirmation, String>)> = vec![];
    for c in &found.points {
        let decided = decision(c, &store.confirmations()?).cloned();
        let result = match decided {
            Some(d) => Ok(d),
            None => {
                let job = Job { args, layouts, root: home.root(), runs: &runs, found: &found };
                let result = job.decide(c);
                if let Ok(d) = &result {
                    store.record(d)?;
                }
                result
            }
        };
        if !args.quiet {
            say!("{} {}..{}: {}", c.key, short(&c.last_good), short(&c.first_bad), said(&result));
        }
        rows.push((c.clone(), result));
    }
    match args.format {
        DetectFormat::Json => show!("{}\n", json(&rows)),
        DetectFormat::Text | DetectFormat::Markdown => show!("{}", table(&rows, args.format)),
    }
    Ok(ExitCode::SUCCESS)
}

/// One line of a decision, or why there is none.
fn said(result: &Result<Confirmation, String>) -> String {
    match result {
        Ok(d) => {
            let at = d.commit.as_deref().map_or(String::new(), |c| format!(" at {}", short(c)));
            format!("{}{at}: {}", d.outcome.word(), d.detail)
        }
        Err(why) => format!("undecided: {why}"),
    }
}

/// What deciding one change point needs.
struct Job<'a> {
    args: &'a HistoryConfirmArgs,
    layouts: u32,
    root: &'a Path,
    runs: &'a Path,
    found: &'a Found,
}

impl Job<'_> {
    /// Re-runs `c` as its figure needs; why not, in words (nothing is stored then).
    fn decide(&self, c: &ChangePoint) -> Result<Confirmation, String> {
        let series = self.found.series.iter().find(|s| s.key == c.key).ok_or("its series is gone")?;
        let decided = |outcome, commit: Option<String>, detail: String, evidence: Option<String>| Confirmation {
            key: c.key.clone(),
            last_good: c.last_good.clone(),
            first_bad: c.first_bad.clone(),
            outcome,
            commit,
            detail,
            evidence,
        };
        if series.exact {
            let counts = format!("{:.2} → {:.2} per op", c.change.before, c.change.after);
            if c.adjacent == Some(true) {
                return Ok(decided(Outcome::Exact, Some(c.first_bad.clone()), counts, None));
            }
            let metric = if c.key.metric == "instructions" { "instructions" } else { "io" };
            let (commit, evidence) = self.bisect(c, metric)?;
            return Ok(decided(Outcome::Exact, commit, format!("{counts}; bisected by {metric}"), Some(evidence)));
        }
        let latency = open_loop_percentile(&c.key.metric);
        if c.key.metric != "throughput" && latency.is_none() {
            return Err(format!(
                "confirming a {} change point is not built yet: compare the two commits with `harness ab`",
                c.key.metric
            ));
        }
        let (outcome, detail, evidence) = match latency {
            Some(p) => self.latency_ab(c, p)?,
            None => self.ab(c)?,
        };
        if outcome != Outcome::Confirmed || c.adjacent == Some(true) {
            let commit = (outcome == Outcome::Confirmed).then(|| c.first_bad.clone());
            return Ok(decided(outcome, commit, detail, Some(evidence)));
        }
        if latency.is_some() {
            let detail = format!("{detail}; not narrowed: `harness bisect --metric latency` is not built yet");
            return Ok(decided(outcome, None, detail, Some(evidence)));
        }
        let (commit, search) = self.bisect(c, "throughput")?;
        Ok(decided(outcome, commit, format!("{detail}; bisected"), Some(format!("{evidence}, {search}"))))
    }

    /// The case of `c` as `harness run` selects it.
    fn selection(&self, c: &ChangePoint) -> Result<(CaseId, Selection), String> {
        let id = CaseId::parse(&c.key.case_id)
            .ok_or_else(|| format!("'{}' is not a case id it can rerun", c.key.case_id))?;
        let config = self.found.configurations.get(&c.key.case_id).cloned().unwrap_or_else(|| "all".into());
        let select = Selection {
            configs: vec![config],
            filters: vec![format!("^{}$", regex::escape(id.name()))],
            params: id.params().iter().map(|(k, v)| format!("{k}={v}")).collect(),
            hidden: true,
        };
        Ok((id, select))
    }

    /// Builds both commits of `c` and runs FIRST BAD's case paired against LAST GOOD's across
    /// the layouts, with an instruction fork of each build; `plan` sets the forks (and a rate).
    fn paired(
        &self,
        c: &ChangePoint,
        plan: impl FnOnce(&CaseId, &mut Timing, &mut Pairs) -> Result<(), String>,
    ) -> Result<Paired, String> {
        let build = |commit: &str| crate::layouts::builds::commit_binary(commit, true, self.args.quiet);
        let (good, bad) = (build(&c.last_good)?, build(&c.first_bad)?);
        let (id, select) = self.selection(c)?;
        let out = self.out(c, "ab");
        let urls = (self.args.database_url.as_str(), self.args.redis_url.as_str());
        let mut run = ChildRun::new(&bad, select, urls, &out, format!("the A/B of {}", c.key));
        run.timing.threads = Some(id.threads());
        // Both builds' instructions whatever the pairs decide (the layout check counts them only
        // for a FASTER or SLOWER case): an A/B that does not confirm a step is `layout` when the
        // code ran the same instructions, `not reproduced` when it did not.
        run.counting = Counting::Instructions { ops: None, cache_sim: false, keep: None };
        let mut pairs = Pairs { layouts: Some(self.layouts), no_layout_check: false, ..Pairs::against(&good) };
        plan(&id, &mut run.timing, &mut pairs)?;
        run.pairs = Some(pairs);
        let report = run.run().map_err(|e| e.to_string())?;
        Ok(Paired { id, report, out, bad })
    }

    /// What an A/B of `pairs` fork pairs whose verdict is `verdict` decides of `c`, and whether
    /// both builds ran the same instructions; why it decided nothing.
    fn decision_of(
        &self,
        c: &ChangePoint,
        verdict: Verdict,
        instructions: Option<(f64, f64)>,
        pairs: usize,
        out: &Path,
    ) -> Result<(Outcome, bool), String> {
        let same_instructions = instructions.is_some_and(|(a, b)| (b / a - 1.0).abs() < SAME_INSTRUCTIONS);
        match outcome(c.regression, verdict, same_instructions) {
            Some(decided) => Ok((decided, same_instructions)),
            None => Err(format!(
                "its A/B stayed undecided after {pairs} fork pairs ({}): give --max-forks more",
                out.display()
            )),
        }
    }

    /// The paired A/B of FIRST BAD against LAST GOOD across layouts: its outcome, one line of
    /// what it measured, and its report.
    fn ab(&self, c: &ChangePoint) -> Result<(Outcome, String, String), String> {
        let Paired { report, out, bad, .. } = self.paired(c, |_, _, pairs| {
            pairs.auto_max_forks = Some(self.args.max_forks);
            Ok(())
        })?;
        let row =
            compare_sides(&report, Options::default()).rows.into_iter().next().ok_or("its A/B compared no case")?;
        // Explained whatever it decides: the flame graphs show where the instructions differ,
        // or that they do not, an undecided A/B's too.
        let explained = match self.args.explain {
            true => explain(&bad, &out, &self.args.database_url, &self.args.redis_url),
            false => String::new(),
        };
        let test = row.test.ok_or_else(|| format!("its A/B had too few fork pairs to test{explained}"))?;
        let (outcome, same) = self
            .decision_of(c, row.verdict, row.instructions, row.pairs.len(), &out)
            .map_err(|why| format!("{why}{explained}"))?;
        let instructions = match row.instructions {
            Some((a, _)) if same => format!("same instructions ({a:.0} per op)"),
            Some((a, b)) => format!("instructions {:+.2}%", (b / a - 1.0) * 100.0),
            None => "instructions not counted".into(),
        };
        let detail = format!(
            "{} over {} pairs across {} layouts ({}), {instructions}{explained}",
            change(&test),
            row.pairs.len(),
            self.layouts,
            row.verdict.text(Options::default().noise_band_pct)
        );
        Ok((outcome, detail, out.display().to_string()))
    }

    /// The paired A/B at the case's rate of FIRST BAD against LAST GOOD across layouts, judged on
    /// percentile `p` fork pair by fork pair (`--forks` is `--max-forks`: the sequential plan
    /// stops on throughput, which an open-loop fork holds at its rate): as [`Job::ab`].
    fn latency_ab(&self, c: &ChangePoint, p: Percentile) -> Result<(Outcome, String, String), String> {
        let Paired { id, report, out, .. } = self.paired(c, |id, timing, _| {
            timing.rate = Some(id.rate().ok_or("its case ran closed-loop: it has no rate to re-run at")?);
            timing.forks = Some(self.args.max_forks);
            Ok(())
        })?;
        let case = report.benchmarks.iter().find(|b| b.id() == id).ok_or("its A/B ran no such case")?;
        let options = latency::Options { percentile: p, ..latency::Options::default() };
        let row = latency::compare_benchmark(case, options);
        let test = row.test.ok_or("too few of its A/B's fork pairs kept the rate to test")?;
        let (outcome, _) = self.decision_of(c, row.verdict, row.instructions, row.pairs.len(), &out)?;
        let detail = format!(
            "{} {} at {} over {} pairs across {} layouts ({})",
            p.key(),
            change(&test),
            id.rate().map_or(String::new(), |r| r.to_string()),
            row.pairs.len(),
            self.layouts,
            row.verdict.text(options.noise_band_pct)
        );
        Ok((outcome, detail, out.display().to_string()))
    }

    /// `harness bisect LAST_GOOD FIRST_BAD` of the case by `metric`: the commit it names (none
    /// when it ends in a range) and its search's JSON file.
    fn bisect(&self, c: &ChangePoint, metric: &str) -> Result<(Option<String>, String), String> {
        let (_, select) = self.selection(c)?;
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this harness: {e}"))?;
        let mut cmd = std::process::Command::new(exe);
        cmd.current_dir(self.root).args(["bisect", &c.last_good, &c.first_bad]).args(&select.configs);
        for f in &select.filters {
            cmd.args(["-f", f]);
        }
        for p in &select.params {
            cmd.args(["-p", p]);
        }
        cmd.args(["--hidden", "--metric", metric, "--json", "--quiet"]);
        cmd.args(["--database-url", &self.args.database_url, "--redis-url", &self.args.redis_url]);
        if !c.regression {
            cmd.arg("--faster");
        }
        if metric == "throughput" {
            cmd.args(["--layouts", &self.layouts.to_string(), "--max-forks", &self.args.max_forks.to_string()]);
        }
        let done = cmd.stdin(std::process::Stdio::null()).output().map_err(|e| format!("cannot run bisect: {e}"))?;
        let search: serde_json::Value = serde_json::from_slice(&done.stdout).map_err(|_| {
            let err = workloads::redact::redact(&String::from_utf8_lossy(&done.stderr));
            format!("its bisect failed: {}", err.lines().last().unwrap_or("no output"))
        })?;
        let kept = self.out(c, "bisect");
        std::fs::write(&kept, serde_json::to_string_pretty(&search).unwrap_or_default())
            .map_err(|e| format!("cannot keep the search as {}: {e}", kept.display()))?;
        let commit = match search["outcome"].as_str() {
            Some("found") => search["first_bad"][0].as_str().map(String::from),
            _ => None,
        };
        Ok((commit, kept.display().to_string()))
    }

    /// Where a step of `c` keeps its file: `<runs>/<good>-<bad>-<what>-<case>.json`.
    fn out(&self, c: &ChangePoint, what: &str) -> PathBuf {
        let case: String =
            c.key.case_id.chars().map(|ch| if ch.is_ascii_alphanumeric() || ch == '=' { ch } else { '_' }).collect();
        self.runs.join(format!("{}-{}-{what}-{case}.json", short(&c.last_good), short(&c.first_bad)))
    }
}

/// A paired A/B's case, its report, where the report is kept, and FIRST BAD's build that ran it.
struct Paired {
    id: CaseId,
    report: Report,
    out: PathBuf,
    bad: PathBuf,
}

/// `BAD explain AB.json` (FIRST BAD's own harness, so that its instruction fork is that
/// build's), its explanation kept beside the report: what the decision's detail adds.
fn explain(bad: &Path, report: &Path, database_url: &str, redis_url: &str) -> String {
    let mut cmd = std::process::Command::new(bad);
    cmd.arg("explain").arg(report).args(["--database-url", database_url, "--redis-url", redis_url]);
    let done = cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).output();
    match done {
        Ok(done) if done.status.success() => {
            format!("; explained in {}", crate::app::explain::beside(report).display())
        }
        Ok(done) => {
            let err = workloads::redact::redact(&String::from_utf8_lossy(&done.stderr));
            format!("; not explained: {}", err.lines().last().unwrap_or("explain failed"))
        }
        Err(e) => format!("; not explained: cannot run {} ({e})", bad.display()),
    }
}

/// A test's ratio and interval as changes: `+3.10% [+1.20%, +5.00%]`.
fn change(test: &ForkTest) -> String {
    let pct = |x: f64| (x - 1.0) * 100.0;
    format!("{:+.2}% [{:+.2}%, {:+.2}%]", pct(test.ratio), pct(test.lower), pct(test.upper))
}

/// The percentile an open-loop latency series follows (`open_loop.p99`), if it is one.
fn open_loop_percentile(metric: &str) -> Option<Percentile> {
    match metric.strip_prefix("open_loop.")? {
        "p50" => Some(Percentile::P50),
        "p99" => Some(Percentile::P99),
        "p99.9" => Some(Percentile::P999),
        _ => None,
    }
}

/// Instructions per op within this share of each other are the same code.
const SAME_INSTRUCTIONS: f64 = 0.001;

/// What an A/B's verdict says of a change point that was a regression (else an improvement):
/// `None` when it stayed undecided (more pairs would tell).
fn outcome(regression: bool, verdict: Verdict, same_instructions: bool) -> Option<Outcome> {
    let moved = if regression {
        matches!(verdict, Verdict::Slower | Verdict::SlowerSameInstructions)
    } else {
        matches!(verdict, Verdict::Faster | Verdict::FasterSameInstructions)
    };
    match (moved, verdict, same_instructions) {
        (true, _, _) => Some(Outcome::Confirmed),
        (false, Verdict::NoChange | Verdict::TooFewForks | Verdict::NoData, _) => None,
        (false, _, true) => Some(Outcome::Layout),
        (false, _, false) => Some(Outcome::NotReproduced),
    }
}

/// The decisions as a text or Markdown table.
fn table(rows: &[(ChangePoint, Result<Confirmation, String>)], format: DetectFormat) -> String {
    let cells = |(c, r): &(ChangePoint, Result<Confirmation, String>)| {
        let (outcome, commit, detail) = match r {
            Ok(d) => {
                (d.outcome.word().to_string(), d.commit.as_deref().map_or("-", short).to_string(), d.detail.clone())
            }
            Err(why) => ("undecided".into(), "-".into(), why.clone()),
        };
        let range = format!("{}..{}", short(&c.last_good), short(&c.first_bad));
        vec![format!("{}", c.key), range, outcome, commit, detail]
    };
    let header = ["case and figure", "last good..first bad", "outcome", "commit", "what the re-run measured"];
    let decided = rows.iter().filter(|(_, r)| r.is_ok()).count();
    let summary = format!("{} change point(s): {decided} decided, {} undecided\n", rows.len(), rows.len() - decided);
    if rows.is_empty() {
        return summary;
    }
    if format == DetectFormat::Markdown {
        let mut out = format!("| {} |\n|---|---|---|---|---|\n", header.join(" | "));
        for r in rows {
            out += &format!("| {} |\n", cells(r).join(" | "));
        }
        return format!("{out}\n{summary}");
    }
    let mut table = vec![header.map(String::from).to_vec()];
    table.extend(rows.iter().map(cells));
    crate::format::table(&table, |_| false) + &summary
}

fn json(rows: &[(ChangePoint, Result<Confirmation, String>)]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|(c, r)| {
            let (outcome, commit, detail, evidence) = match r {
                Ok(d) => (d.outcome.word(), d.commit.clone(), d.detail.clone(), d.evidence.clone()),
                Err(why) => ("undecided", None, why.clone(), None),
            };
            serde_json::json!({
                "case": c.key.case_id, "metric": c.key.metric, "machine": c.key.machine,
                "last_good": c.last_good, "first_bad": c.first_bad, "regression": c.regression,
                "outcome": outcome, "commit": commit, "detail": detail, "evidence": evidence,
            })
        })
        .collect();
    serde_json::to_string_pretty(&rows).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ab_confirms_the_way_the_history_moved_and_names_a_layout_by_its_instructions() {
        assert_eq!(outcome(true, Verdict::Slower, false), Some(Outcome::Confirmed));
        assert_eq!(outcome(true, Verdict::SlowerSameInstructions, true), Some(Outcome::Confirmed), "across layouts");
        assert_eq!(outcome(false, Verdict::Faster, false), Some(Outcome::Confirmed));
        assert_eq!(outcome(true, Verdict::WithinBand, true), Some(Outcome::Layout));
        assert_eq!(outcome(true, Verdict::Faster, true), Some(Outcome::Layout), "the other way, same code");
        assert_eq!(outcome(true, Verdict::WithinBand, false), Some(Outcome::NotReproduced));
        assert_eq!(outcome(false, Verdict::Slower, false), Some(Outcome::NotReproduced));
        assert_eq!(outcome(true, Verdict::NoChange, true), None, "undecided: more pairs would tell");
    }

    #[test]
    fn an_open_loop_series_is_confirmed_on_its_percentile_and_others_are_not() {
        assert_eq!(open_loop_percentile("open_loop.p99"), Some(Percentile::P99));
        assert_eq!(open_loop_percentile("open_loop.p99.9"), Some(Percentile::P999));
        assert_eq!(open_loop_percentile("open_loop.p50"), Some(Percentile::P50));
        assert_eq!(open_loop_percentile("latency.p99"), None, "closed-loop samples: no rate to re-run at");
        assert_eq!(open_loop_percentile("throughput"), None);
    }
}
