//! What an instruction fork leaves behind: callgrind's dumps, summed and optionally kept.

/// The instructions of the measured ops: the sum over every dump the worker requested
/// (`harness-measure`, one per instrumented window) among the callgrind output files in `dir`.
pub(crate) fn callgrind_total(dir: &std::path::Path) -> anyhow::Result<u64> {
    let (mut total, mut dumps) = (0u64, 0);
    for entry in std::fs::read_dir(dir)? {
        let text = std::fs::read_to_string(entry?.path())?;
        if !crate::explain::profile::is_measurement(&text) {
            continue;
        }
        // `totals:` is the dump's cost; `summary:` is unreliable once instrumentation has been
        // stopped and started (callgrind 3.19 prints an underflowed difference there).
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("totals:"))
            .ok_or_else(|| anyhow::anyhow!("a callgrind dump has no totals line"))?;
        let ir = line.split_whitespace().next().ok_or_else(|| anyhow::anyhow!("empty totals line"))?;
        total += ir.parse::<u64>()?;
        dumps += 1;
    }
    anyhow::ensure!(dumps > 0, "callgrind wrote no measurement dump in {}", dir.display());
    Ok(total)
}

/// Copies the measurement dumps of `dir` into `keep` as `<name>.callgrind.out[.N]`, the name
/// made file-safe.
pub(super) fn keep_dumps(dir: &std::path::Path, keep: &std::path::Path, name: &str) -> anyhow::Result<()> {
    let safe = crate::explain::file_stem(name);
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if crate::explain::profile::is_measurement(&std::fs::read_to_string(&path)?) {
            let suffix = if n == 0 { String::new() } else { format!(".{n}") };
            let to = keep.join(format!("{safe}.callgrind.out{suffix}"));
            std::fs::copy(&path, &to).map_err(|e| anyhow::anyhow!("cannot keep {}: {e}", to.display()))?;
            n += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::callgrind_total;

    #[test]
    fn callgrind_totals_are_summed_over_measure_dumps_only() {
        let dir = tempfile::tempdir().unwrap();
        let dump = |name: &str, trigger: &str, summary: &str, totals: &str| {
            let text = format!(
                "version: 1\ndesc: Trigger: {trigger}\nevents: Ir\nsummary: {summary}\nfn=x\n0 1\ntotals: {totals}\n"
            );
            std::fs::write(dir.path().join(name), text).unwrap();
        };
        dump("callgrind.out", "Program termination", "18446744073708920984", "9");
        dump("callgrind.out.1", "Client Request: harness-measure", "631806", "631806");
        dump("callgrind.out.2", "Client Request: harness-measure", "321", "632136");
        assert_eq!(callgrind_total(dir.path()).unwrap(), 631806 + 632136);
        let empty = tempfile::tempdir().unwrap();
        assert!(callgrind_total(empty.path()).unwrap_err().to_string().contains("no measurement dump"));
    }
}
