//! `--pin CPUS`: the CPU list workers are pinned to with `sched_setaffinity`.

/// A parsed CPU list, e.g. `1` or `0,2-3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList {
    /// The list as given.
    pub text: String,
    /// The CPUs, ascending, without duplicates.
    pub cpus: Vec<usize>,
}

/// Parses `1`, `0,2` or `0-3` (clap value parser).
pub(crate) fn parse_cpus(s: &str) -> Result<CpuList, String> {
    let bad = || format!("expected CPU numbers such as 1, 0,2 or 0-3, got '{s}'");
    let mut cpus = vec![];
    for part in s.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
        if a > b || b >= libc::CPU_SETSIZE as usize {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(CpuList { text: s.trim().to_string(), cpus })
}

impl CpuList {
    /// Checks that every CPU is one this process may run on; the error names the usable ones.
    pub fn check_available(&self) -> Result<(), String> {
        let allowed = allowed_cpus();
        match self.cpus.iter().find(|c| !allowed.contains(c)) {
            Some(c) => Err(format!(
                "--pin {}: CPU {c} is not available here (usable: {}); pick from those",
                self.text,
                allowed.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
            )),
            None => Ok(()),
        }
    }

    /// The set for `sched_setaffinity`.
    pub fn cpu_set(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it (cpus < CPU_SETSIZE).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            for &c in &self.cpus {
                libc::CPU_SET(c, &mut set);
            }
            set
        }
    }
}

/// CPUs this process may run on.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity writes into a zeroed cpu_set_t of the size passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![];
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_cpus("1").unwrap().cpus, [1]);
        assert_eq!(parse_cpus("3,0-1,1").unwrap().cpus, [0, 1, 3]);
        assert!(parse_cpus("2-1").unwrap_err().contains("such as 1, 0,2 or 0-3"));
        assert!(parse_cpus("x").is_err() && parse_cpus("").is_err() && parse_cpus("99999").is_err());
    }

    #[test]
    fn unavailable_cpus_are_named() {
        assert!(parse_cpus("0").unwrap().check_available().is_ok() || allowed_cpus().first() != Some(&0));
        let e = parse_cpus("1000").unwrap().check_available().unwrap_err();
        assert!(e.contains("CPU 1000 is not available") && e.contains("usable:"), "{e}");
    }
}
