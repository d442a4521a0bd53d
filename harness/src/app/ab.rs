//! `harness ab REF`: REF's harness built (or reused) as the baseline, this build run against it.

use super::measure;
use crate::error::BadInput;
use std::process::ExitCode;

/// `harness ab REF`: builds (or reuses) REF's harness and runs this build against it.
pub(super) fn ab(mut args: crate::cli::AbArgs) -> anyhow::Result<ExitCode> {
    if args.run.baseline_bin.is_some() {
        return Err(BadInput(
            "harness ab builds its baseline from REF: drop --baseline-bin, or use `harness run --baseline-bin PATH`"
                .into(),
        )
        .into());
    }
    if let Some(k) = args.run.layouts {
        measure::check_layouts(&args.run, k)?;
    }
    // A typo in a filter, a param or a URL is one line now, not after a build of minutes.
    measure::check_inputs(&args.run)?;
    let baseline = crate::ab::prepare(&args.rev, args.run.quiet())?;
    if !args.run.quiet() {
        let how = if baseline.built { "built" } else { "reusing the build of" };
        let short = &baseline.commit[..baseline.commit.len().min(12)];
        say!("harness ab: baseline {} ({short}) = {how} {}", args.rev, baseline.binary.display());
    }
    if crate::machine::build_git().dirty == Some(true) {
        say!("warning: this build (the candidate) was made from uncommitted changes; its report records dirty: true");
    }
    let layouts = match args.run.layouts {
        Some(count) => Some(layout_variants(count, &baseline, args.run.quiet())?),
        None => None,
    };
    args.run.baseline_bin = Some(baseline.binary);
    measure::run_benchmarks(&args.run, layouts)
}

/// `ab --layouts K`: both builds made relinkable.
fn layout_variants(
    count: u32,
    baseline: &crate::ab::BaselineRev,
    quiet: bool,
) -> Result<crate::layouts::Variants, BadInput> {
    use crate::layouts::builds;
    let short = &baseline.commit[..baseline.commit.len().min(12)];
    let base = builds::of_commit(baseline, &format!("the baseline ({short})"), quiet)?;
    let current = builds::of_working_tree(&baseline.home, quiet)?;
    Ok(crate::layouts::Variants { count, baseline: base, current })
}
