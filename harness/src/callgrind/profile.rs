//! A callgrind dump read into a profile: every function's own cost, the source files that cost
//! came from, and the calls between functions with their inclusive cost.
//!
//! The format is callgrind's (valgrind docs, "Callgrind Format Specification"): `events:` names
//! the cost columns; `ob=`/`fl=`/`fn=` set the object, file and function of the cost lines that
//! follow; `fi=`/`fe=` switch the file for inlined code; `cob=`/`cfi=`/`cfn=` and `calls=` name a
//! call, whose next cost line is the call's inclusive cost. Names may be compressed: `(7) name`
//! defines id 7, a later `(7)` refers to it; objects, files and functions each have their own ids.

use std::collections::BTreeMap;

/// The costs of one function, file or call: one number per event.
pub(crate) type Costs = Vec<u64>;

/// What one or more callgrind dumps counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Profile {
    /// The event names (`Ir` first; with cache simulation also `Dr`, `D1mr`, `Bcm`, ...).
    pub events: Vec<String>,
    /// Each function's own (exclusive) cost, by demangled name.
    pub own: BTreeMap<String, Costs>,
    /// Each function's source file (the `fl=` its cost lines were under first).
    pub file_of: BTreeMap<String, String>,
    /// Each function's object (the binary or shared library).
    pub object_of: BTreeMap<String, String>,
    /// Own cost by (function, the file the instruction came from: inlined code keeps its file).
    pub sites: BTreeMap<(String, String), Costs>,
    /// Inclusive cost of the calls from a function to another, by (caller, callee).
    pub calls: BTreeMap<(String, String), Costs>,
}

impl Profile {
    /// The total of event `i` over every function's own cost.
    pub(crate) fn total(&self, event: usize) -> u64 {
        self.own.values().map(|c| c.get(event).copied().unwrap_or(0)).sum()
    }

    /// The index of event `name` (`Ir`, `D1mr`, ...).
    pub(crate) fn event(&self, name: &str) -> Option<usize> {
        self.events.iter().position(|e| e == name)
    }

    /// Each function's inclusive cost of event `i`: its own plus its calls' (a recursive call
    /// counted once per level, as `callgrind_annotate --inclusive=yes` does).
    pub(crate) fn inclusive(&self, event: usize) -> BTreeMap<String, u64> {
        let mut out: BTreeMap<String, u64> =
            self.own.iter().map(|(f, c)| (f.clone(), c.get(event).copied().unwrap_or(0))).collect();
        for ((caller, callee), cost) in &self.calls {
            if caller != callee {
                *out.entry(caller.clone()).or_default() += cost.get(event).copied().unwrap_or(0);
            }
        }
        out
    }

    /// Adds `other` (another dump of the same run) to this profile.
    pub(crate) fn merge(&mut self, other: Profile) {
        if self.events.is_empty() {
            self.events = other.events.clone();
        }
        let width = self.events.len();
        for (k, v) in other.own {
            add(self.own.entry(k).or_default(), &v, width);
        }
        for (k, v) in other.sites {
            add(self.sites.entry(k).or_default(), &v, width);
        }
        for (k, v) in other.calls {
            add(self.calls.entry(k).or_default(), &v, width);
        }
        for (k, v) in other.file_of {
            self.file_of.entry(k).or_insert(v);
        }
        for (k, v) in other.object_of {
            self.object_of.entry(k).or_insert(v);
        }
    }
}

fn add(into: &mut Costs, costs: &[u64], width: usize) {
    if into.len() < width {
        into.resize(width, 0);
    }
    for (i, c) in costs.iter().enumerate().take(width) {
        into[i] += c;
    }
}

/// A function name as people read it: Rust's demangled without its hash, C's as it is.
pub(crate) fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// Compressed names of one kind (objects, files or functions): `(id) name` defines, `(id)` refers.
#[derive(Default)]
struct Names(BTreeMap<String, String>);

impl Names {
    fn resolve(&mut self, value: &str) -> String {
        let value = value.trim();
        let Some(rest) = value.strip_prefix('(') else { return value.to_string() };
        let Some((id, name)) = rest.split_once(')') else { return value.to_string() };
        let name = name.trim();
        if name.is_empty() {
            self.0.get(id).cloned().unwrap_or_else(|| format!("({id})"))
        } else {
            self.0.insert(id.to_string(), name.to_string());
            name.to_string()
        }
    }
}

/// The parser's position in a dump.
#[derive(Default)]
struct State {
    objects: Names,
    files: Names,
    functions: Names,
    positions: usize,
    object: String,
    file: String,
    inline_file: Option<String>,
    function: String,
    callee: Option<String>,
    callee_object: Option<String>,
    callee_file: Option<String>,
    /// The next cost line is a call's inclusive cost.
    in_call: bool,
}

/// Reads one callgrind dump (the text of a `callgrind.out` file).
pub(crate) fn parse(text: &str) -> Result<Profile, String> {
    let mut profile = Profile::default();
    let mut st = State { positions: 1, ..State::default() };
    for (n, line) in text.lines().enumerate() {
        parse_line(line, &mut st, &mut profile).map_err(|e| format!("callgrind dump line {}: {e}", n + 1))?;
    }
    if profile.events.is_empty() {
        return Err("not a callgrind dump: it has no `events:` line".into());
    }
    Ok(profile)
}

fn parse_line(line: &str, st: &mut State, profile: &mut Profile) -> Result<(), String> {
    let Some(first) = line.chars().next() else { return Ok(()) };
    if first.is_ascii_digit() || first == '+' || first == '-' || first == '*' {
        return cost_line(line, st, profile);
    }
    let Some((key, value)) = line.split_once('=').or_else(|| line.split_once(':')) else { return Ok(()) };
    match key {
        "events" => profile.events = value.split_whitespace().map(String::from).collect(),
        "positions" => st.positions = value.split_whitespace().count().max(1),
        "ob" => st.object = st.objects.resolve(value),
        "fl" => {
            st.file = st.files.resolve(value);
            st.inline_file = None;
        }
        "fi" | "fe" => {
            let file = st.files.resolve(value);
            st.inline_file = (file != st.file).then_some(file);
        }
        "fn" => {
            st.function = demangle(&st.functions.resolve(value));
            st.inline_file = None;
            st.callee = None;
            profile.file_of.entry(st.function.clone()).or_insert_with(|| st.file.clone());
            profile.object_of.entry(st.function.clone()).or_insert_with(|| st.object.clone());
        }
        "cob" => st.callee_object = Some(st.objects.resolve(value)),
        "cfi" | "cfl" => st.callee_file = Some(st.files.resolve(value)),
        "cfn" => st.callee = Some(demangle(&st.functions.resolve(value))),
        "calls" => st.in_call = true,
        _ => {}
    }
    Ok(())
}

fn cost_line(line: &str, st: &mut State, profile: &mut Profile) -> Result<(), String> {
    let width = profile.events.len();
    let costs: Costs = line
        .split_whitespace()
        .skip(st.positions)
        .map(|t| t.parse::<u64>().map_err(|_| format!("cost '{t}' is not a count")))
        .collect::<Result<_, String>>()?;
    if std::mem::take(&mut st.in_call) {
        let callee = st.callee.clone().ok_or("a `calls=` line without `cfn=`")?;
        if let Some(object) = st.callee_object.take() {
            profile.object_of.entry(callee.clone()).or_insert(object);
        }
        if let Some(file) = st.callee_file.take() {
            profile.file_of.entry(callee.clone()).or_insert(file);
        }
        add(profile.calls.entry((st.function.clone(), callee)).or_default(), &costs, width);
        return Ok(());
    }
    let file = st.inline_file.clone().unwrap_or_else(|| st.file.clone());
    add(profile.own.entry(st.function.clone()).or_default(), &costs, width);
    add(profile.sites.entry((st.function.clone(), file)).or_default(), &costs, width);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A dump in callgrind's format with name compression, an inlined file and calls: `main`
    /// spends 10 itself, calls `work` (100 own + 5 inlined from core) twice over, and `free`.
    pub(crate) const DUMP: &str = "\
version: 1
creator: callgrind-3.19.0
desc: Trigger: Client Request: harness-measure
positions: line
events: Ir Bcm
ob=(1) /bin/app
fl=(1) src/main.rs
fn=(1) main
3 10 1
cfl=(2) src/work.rs
cfn=(2) _ZN3app4work17h0123456789abcdefE
calls=2 7
4 105 2
cob=(2) /lib/libc.so.6
cfl=(3) ./malloc/malloc.c
cfn=(3) free
calls=1 0
5 7
fl=(2)
fn=(2)
7 100 2
fi=(4) /rustc/abc/library/core/src/num/mod.rs
+1 5
ob=(2)
fl=(3)
fn=(3)
0 7
totals: 122 3
";

    #[test]
    fn a_dump_gives_each_function_its_own_cost_its_files_and_its_calls() {
        let p = parse(DUMP).unwrap();
        assert_eq!(p.events, ["Ir", "Bcm"]);
        assert_eq!(p.own["main"], vec![10, 1]);
        assert_eq!(p.own["app::work"], vec![105, 2]);
        assert_eq!(p.own["free"], vec![7, 0]);
        assert_eq!(p.total(0), 122);
        assert_eq!(p.file_of["app::work"], "src/work.rs");
        assert_eq!(p.object_of["free"], "/lib/libc.so.6");
        assert_eq!(p.sites[&("app::work".into(), "/rustc/abc/library/core/src/num/mod.rs".into())], vec![5, 0]);
        assert_eq!(p.sites[&("app::work".into(), "src/work.rs".into())], vec![100, 2]);
        assert_eq!(p.calls[&("main".into(), "app::work".into())], vec![105, 2]);
        let inclusive = p.inclusive(0);
        assert_eq!(inclusive["main"], 122);
        assert_eq!(inclusive["app::work"], 105);
    }

    #[test]
    fn merged_dumps_add_up() {
        let mut p = parse(DUMP).unwrap();
        p.merge(parse(DUMP).unwrap());
        assert_eq!(p.total(0), 244);
        assert_eq!(p.calls[&("main".into(), "free".into())], vec![14, 0]);
    }

    #[test]
    fn what_is_not_a_dump_is_refused_with_the_line() {
        assert!(parse("hello\n").unwrap_err().contains("no `events:` line"));
        let bad = "events: Ir\nfn=x\n3 many\n";
        assert!(parse(bad).unwrap_err().contains("line 3"));
    }
}
