//! A case's identity, typed and built once, as criterion's `BenchmarkId` is: the workload's
//! name, its param values, its measuring threads and, open-loop, its arrival rate. Its `Display` is the one label every
//! command, report reader and export shows (`sql/select[db=sqlite,row_count=1000]`).

use std::collections::BTreeMap;
use std::fmt;

/// One case's identity: ordered (by name, then params, then threads) and hashable, so readers
/// key cases by it rather than by a label string rebuilt per call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct CaseId {
    name: String,
    params: BTreeMap<String, String>,
    threads: u32,
    rate: Option<crate::rate::Rate>,
}

impl CaseId {
    /// The identity of workload `name` with `params`, measured by `threads` threads or tasks.
    pub(crate) fn new(name: impl Into<String>, params: BTreeMap<String, String>, threads: u32) -> CaseId {
        CaseId { name: name.into(), params, threads, rate: None }
    }

    /// The same case run open-loop at `rate` (or closed-loop with `None`).
    pub(crate) fn with_rate(self, rate: Option<crate::rate::Rate>) -> CaseId {
        CaseId { rate, ..self }
    }

    /// The open-loop arrival rate (`--rate`), if any.
    pub(crate) fn rate(&self) -> Option<crate::rate::Rate> {
        self.rate
    }

    /// The workload's name, `group/name`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its param values.
    pub(crate) fn params(&self) -> &BTreeMap<String, String> {
        &self.params
    }

    /// Measuring threads or tasks (1 unless `--threads`).
    pub(crate) fn threads(&self) -> u32 {
        self.threads
    }

    /// `k=v,...` of its params, with `threads=N` when it ran several measurers; empty for a
    /// bare workload.
    pub(crate) fn params_text(&self) -> String {
        let mut p: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if self.threads != 1 {
            p.push(format!("threads={}", self.threads));
        }
        if let Some(rate) = self.rate {
            p.push(format!("rate={rate}"));
        }
        p.join(",")
    }

    /// The case a label names, as [`CaseId`]'s `Display` writes it
    /// (`name[k=v,...,threads=N,rate=R/s]`); `None` when it is not one.
    pub(crate) fn parse(label: &str) -> Option<CaseId> {
        let Some((name, rest)) = label.split_once('[') else {
            return (!label.is_empty()).then(|| CaseId::new(label, BTreeMap::new(), 1));
        };
        let inner = rest.strip_suffix(']')?;
        let (mut params, mut threads, mut rate) = (BTreeMap::new(), 1, None);
        for pair in inner.split(',') {
            match pair.split_once('=')? {
                ("threads", n) => threads = n.parse().ok()?,
                ("rate", r) => rate = Some(crate::rate::Rate::from_label(r)?),
                (k, v) => {
                    params.insert(k.to_string(), v.to_string());
                }
            }
        }
        Some(CaseId::new(name, params, threads).with_rate(rate))
    }

    /// `[k=v,...]`, or nothing for a bare workload: what the label adds to the name.
    pub(crate) fn bracketed_params(&self) -> String {
        let inner = self.params_text();
        if inner.is_empty() { inner } else { format!("[{inner}]") }
    }
}

impl fmt::Display for CaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.name, self.bracketed_params())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(p: &[(&str, &str)]) -> BTreeMap<String, String> {
        p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn displays_the_bare_name_or_the_params_in_order_with_threads_last() {
        assert_eq!(CaseId::new("baseline/noop", params(&[]), 1).to_string(), "baseline/noop");
        let id = CaseId::new("sql/select", params(&[("row_count", "10"), ("db", "sqlite")]), 4);
        assert_eq!(id.to_string(), "sql/select[db=sqlite,row_count=10,threads=4]");
        assert_eq!(id.bracketed_params(), "[db=sqlite,row_count=10,threads=4]");
        assert_eq!(CaseId::new("a", params(&[]), 2).params_text(), "threads=2");
    }

    #[test]
    fn a_rate_comes_last_and_tells_cases_apart() {
        use crate::rate::{Arrivals, Rate};
        let id = CaseId::new("a", params(&[("k", "1")]), 2);
        let open = id.clone().with_rate(Some(Rate { per_sec: 500, arrivals: Arrivals::Poisson }));
        assert_eq!(open.to_string(), "a[k=1,threads=2,rate=500/s]");
        assert_ne!(open, id);
        assert_eq!(open.rate().map(|r| r.per_sec), Some(500));
    }

    #[test]
    fn a_label_reads_back_as_its_case() {
        for id in [
            CaseId::new("baseline/noop", params(&[]), 1),
            CaseId::new("sql/select", params(&[("row_count", "10"), ("db", "sqlite")]), 4),
            CaseId::new("a", params(&[]), 2),
        ] {
            assert_eq!(CaseId::parse(&id.to_string()), Some(id));
        }
        for not in ["", "a[k=1", "a[k]", "a[threads=x]"] {
            assert_eq!(CaseId::parse(not), None, "{not}");
        }
    }

    #[test]
    fn an_open_loop_label_reads_back_with_its_rate() {
        use crate::rate::{Arrivals, Rate};
        for arrivals in [Arrivals::Poisson, Arrivals::Constant] {
            let rate = Some(Rate { per_sec: 4426, arrivals });
            let id = CaseId::new("sql/select", params(&[("db", "postgres")]), 2).with_rate(rate);
            assert_eq!(CaseId::parse(&id.to_string()), Some(id));
        }
        assert_eq!(CaseId::parse("a[k=1]"), Some(CaseId::new("a", params(&[("k", "1")]), 1)));
        for not in ["a[rate=0/s]", "a[rate=5000]", "a[rate=x/s]", "a[rate=20000000/s]", "a[rate=5/s-bursty]"] {
            assert_eq!(CaseId::parse(not), None, "{not}");
        }
    }

    #[test]
    fn threads_and_params_tell_cases_apart() {
        let one = CaseId::new("a", params(&[("k", "1")]), 1);
        assert_ne!(one, CaseId::new("a", params(&[("k", "1")]), 2));
        assert_ne!(one, CaseId::new("a", params(&[("k", "2")]), 1));
        assert_eq!(one, CaseId::new("a", params(&[("k", "1")]), 1));
    }
}
