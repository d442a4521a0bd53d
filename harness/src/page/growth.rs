//! The growth section of a report page: per database and layout, the chart of the curves
//! ([`crate::report::growth`]), the sentence under it and the table of every step.

use crate::report::Benchmark;
use crate::report::growth::{Curve, Point, curves, key_index, page_memory};

/// The sentence under a chart: at the largest table size every curve reached, each kind's rate
/// and WAL per row against the fastest kind's there.
pub(crate) fn ratio_sentence(curves: &[Curve]) -> Option<String> {
    let common = curves.iter().map(|c| c.points.last().map_or(0.0, |p| p.rows)).fold(f64::INFINITY, f64::min);
    let at: Vec<(&str, &Point)> =
        curves.iter().filter_map(|c| Some((c.kind.as_str(), c.points.iter().find(|p| p.rows == common)?))).collect();
    if at.len() < 2 || at.len() != curves.len() {
        return None;
    }
    let (best, top) = at.iter().copied().max_by(|a, b| a.1.rate.0.total_cmp(&b.1.rate.0))?;
    let parts: Vec<String> = at
        .iter()
        .filter(|(kind, _)| *kind != best)
        .map(|(kind, p)| {
            let wal = match (p.wal_per_row, top.wal_per_row) {
                (Some(w), Some(t)) if t > 0.0 => format!(" and writes {:.2}× its WAL per row", w / t),
                _ => String::new(),
            };
            format!("{kind} inserts at {:.2}× {best}'s rate{wal}", p.rate.0 / top.rate.0)
        })
        .collect();
    Some(format!(
        "In the step that grew the table to {} rows (the largest size every kind reached), {}.",
        crate::format::si(common),
        parts.join("; ")
    ))
}

/// The growth section of the docs page: per `db/layout`, the two-panel chart, the sentence
/// computed from the curves, and a table of each kind at its largest size; with the charts' files.
pub(crate) fn section(group: &str, cases: &[&Benchmark]) -> anyhow::Result<(String, Vec<super::File>)> {
    let (mut page, mut files) = (String::new(), vec![]);
    for (key, curves) in curves(cases) {
        let file = format!("{group}-{}.svg", key.replace('/', "-"));
        let title = format!("{group} on {key}: rows/s and WAL bytes per row against table rows");
        files.push((file.clone(), super::charts::growth(&title, &curves)?));
        page.push_str(&format!("![{title}]({file})\n\n"));
        page.push_str("Each point is one step: the rows it inserted over its time, at the table size it ended at; the line is the median over forks, the band spans the slowest to the fastest fork; a dashed line marks the step where the kind's key index outgrew the memory that holds pages.\n\n");
        page.push_str(&outgrew_sentence(&curves));
        if let Some(sentence) = ratio_sentence(&curves) {
            page.push_str(&sentence);
            page.push_str("\n\n");
        }
        page.push_str(&table(&curves));
        page.push('\n');
    }
    Ok((page, files))
}

/// Where each kind's key index outgrew the page memory, and how far past it the run went.
fn outgrew_sentence(curves: &[Curve]) -> String {
    use crate::format::si;
    let memory = curves.iter().find_map(|c| page_memory(&c.last));
    let Some(memory) = memory.filter(|m| *m > 0) else {
        return String::new();
    };
    let parts: Vec<String> = curves
        .iter()
        .map(|c| {
            let index = key_index(&c.last).unwrap_or(0);
            match c.outgrew {
                _ if index == 0 => format!("{} has no index of its own (the table is keyed by it)", c.kind),
                Some((rows, _)) => {
                    format!("{} at {} rows (ending at {:.1}×)", c.kind, si(rows), index as f64 / memory as f64)
                }
                None => format!("{} never (ending at {:.1}×)", c.kind, index as f64 / memory as f64),
            }
        })
        .collect();
    let none = if curves.iter().all(|c| c.outgrew.is_none()) {
        " No key index outgrew it: a larger `rows` would show whether the kinds part there."
    } else {
        ""
    };
    format!("Memory for pages: {}B. Key index past it: {}.{none}\n\n", si(memory as f64), parts.join(", "))
}

/// Each kind at its largest size: the last step's rate, and what the table and WAL came to.
fn table(curves: &[Curve]) -> String {
    use crate::export::markdown::row;
    use crate::format::si;
    let header = [
        "rows",
        "rows/s, last step (forks' range)",
        "WAL bytes/row, last step",
        "WAL bytes/row, all",
        "key index",
        "table",
        "index reads",
        "forks",
        "fork time",
    ];
    let mut out = row("kind", &header.map(String::from));
    out.push_str(&format!("|---|{}\n", "---:|".repeat(header.len())));
    for c in curves {
        let Some(p) = c.points.last() else { continue };
        let get = |k: &str| c.last.get(k).copied();
        let bytes = |v: Option<i64>| match v {
            None => "-".into(),
            Some(0) => "none".into(),
            Some(b) => format!("{}B", si(b as f64)),
        };
        let wal_all = get("wal_bytes").map_or("-".into(), |w| format!("{:.0}", w as f64 / p.rows));
        let reads = get("idx_blks_read").or(get("cache_misses")).map_or("-".into(), |r| si(r as f64));
        let cells = [
            si(p.rows),
            format!("{} ({}..{})", si(p.rate.0), si(p.rate.1), si(p.rate.2)),
            p.wal_per_row.map_or("-".into(), |w| format!("{w:.0}")),
            wal_all,
            bytes(key_index(&c.last)),
            bytes(get("table_bytes")),
            reads,
            c.forks.0.to_string(),
            c.forks.1.map_or("-".into(), |s| {
                humantime::format_duration(std::time::Duration::from_secs(s.round() as u64)).to_string()
            }),
        ];
        out.push_str(&row(&c.kind, &cells));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Iteration;
    use crate::report::growth::curve;

    /// A stepped case: `kind` on PostgreSQL, forks of steps of 1,000 rows per op, each step
    /// taking `secs[fork][step]` and writing `wal` bytes per row.
    fn case(kind: &str, secs: &[&[f64]], wal: i64) -> Benchmark {
        let mut b = crate::compare::fixtures::timed("growth/insert_batches", secs);
        b.params = [("db", "postgres"), ("layout", "key_pk"), ("kind", kind)]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        for (fork, times) in b.forks.iter_mut().zip(secs) {
            fork.steps = Some(vec![1; times.len()]);
            fork.iterations = times
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let rows = 1000 * (i as i64 + 1);
                    let observed = [
                        ("table_rows", rows),
                        ("wal_bytes", wal * rows),
                        ("key_index_bytes", 40 * rows),
                        ("shared_buffers_bytes", 100_000),
                    ]
                    .map(|(k, v)| (k.to_string(), v))
                    .into();
                    Iteration { ops: 1, nanos: (s * 1e9) as u64, observed, ..Iteration::default() }
                })
                .collect();
        }
        b
    }

    #[test]
    fn points_join_in_table_size_order_with_a_band_over_forks() {
        // The second fork got further: its points join the first fork's by table size, not
        // after them in report order (which zigzagged the old chart).
        let b = case("uuid_v4", &[&[1.0, 2.0], &[1.0, 1.0, 4.0]], 100);
        let c = curve(&b).unwrap();
        let rows: Vec<f64> = c.points.iter().map(|p| p.rows).collect();
        assert_eq!(rows, [1000.0, 2000.0, 3000.0]);
        // The second step: 1,000 rows in 2 s and in 1 s; the last one only the second fork ran.
        assert_eq!(c.points[1].rate, (750.0, 500.0, 1000.0));
        assert_eq!(c.points[2].rate, (250.0, 250.0, 250.0));
        assert_eq!(c.points[2].wal_per_row, Some(100.0));
        assert_eq!(c.forks.0, 2);
        assert_eq!(c.outgrew, Some((3000.0, 100_000)), "40 bytes a row pass 100 kB at 3,000 rows");
    }

    #[test]
    fn the_sentence_is_computed_at_the_largest_common_size() {
        let slow = curve(&case("uuid_v4", &[&[1.0, 4.0]], 300)).unwrap();
        let fast = curve(&case("uuid_v7", &[&[1.0, 1.0, 1.0]], 100)).unwrap();
        let sentence = ratio_sentence(&[slow, fast]).unwrap();
        assert_eq!(
            sentence,
            "In the step that grew the table to 2.000 k rows (the largest size every kind reached), uuid_v4 inserts at 0.25× uuid_v7's rate and writes 3.00× its WAL per row."
        );
    }

    #[test]
    fn the_section_draws_one_chart_per_database_and_layout() {
        let cases = [case("uuid_v4", &[&[1.0, 2.0]], 300), case("uuid_v7", &[&[1.0, 1.0]], 100)];
        let refs: Vec<&Benchmark> = cases.iter().collect();
        let (page, files) = section("growth", &refs).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "growth-postgres-key_pk.svg");
        assert!(files[0].1.contains("WAL bytes per row") && files[0].1.contains("uuid_v7"), "{}", files[0].1);
        assert!(page.contains("| uuid_v4 | 2.000 k | 500.0 (500.0..500.0) | 300 | 300 |"), "{page}");
        assert!(page.contains("uuid_v4 inserts at 0.50× uuid_v7's rate and writes 3.00× its WAL per row"), "{page}");
        assert!(page.contains("Key index past it: uuid_v4 never (ending at 0.8×), uuid_v7 never"), "{page}");
    }
}
