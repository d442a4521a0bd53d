//! The function order of a layout variant: the same for every build of one seed.
//!
//! A variant of seed *s* places each function by a key that does not depend on the build: its
//! name with the hashes rustc puts in symbols taken out (they change with the crate's features
//! and metadata, not with its code), hashed with *s*. Two builds of nearby commits relinked with
//! the same seed therefore lay out the functions they share in the same order: pair *i* of an
//! A/B run compares the two builds at one draw of the layout (common random numbers), so the
//! pair's ratio carries the change and the layout's effect on the change, not two independent
//! layout draws. lld's `--shuffle-sections=SEED` shuffles input sections in the order the object
//! files list them, which a change of features reorders: the same seed gave two unrelated
//! layouts.

use std::fmt::Write as _;
use std::path::Path;

/// A function of a linked binary: its symbol, at its address in the plain link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Function {
    /// The symbol as the linker knows it (mangled).
    pub name: String,
    /// Its address in the plain link (the order the object files give).
    pub address: u64,
}

/// The functions of the ELF binary at `path` (sized code symbols, local ones too), by address.
pub(crate) fn functions(path: &Path) -> Result<Vec<Function>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("cannot read {} as ELF: {e}", path.display()))?;
    let mut found: Vec<Function> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .filter_map(|s| Some(Function { name: s.name().ok()?.to_string(), address: s.address() }))
        .filter(|f| !f.name.is_empty())
        .collect();
    found.sort_by(|a, b| a.address.cmp(&b.address).then_with(|| a.name.cmp(&b.name)));
    found.dedup_by(|a, b| a.name == b.name);
    Ok(found)
}

/// The part of a symbol that names the same function in every build: demangled without the
/// hashes rustc adds (legacy `::h<16 hex>`, v0 crate disambiguators); a C symbol as it is.
pub(crate) fn stable_key(symbol: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(symbol))
}

/// The symbol ordering file of variant `seed`: every function, ordered by its stable key hashed
/// with the seed; functions that share a key (a generic's instances) keep their plain order.
pub(crate) fn ordering(functions: &[Function], seed: u32) -> String {
    let mut keyed: Vec<(u64, String, usize)> = functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let key = stable_key(&f.name);
            (place(&key, seed), key, i)
        })
        .collect();
    keyed.sort();
    let mut out = String::with_capacity(functions.len() * 48);
    for (_, _, i) in keyed {
        let _ = writeln!(out, "{}", functions[i].name);
    }
    out
}

/// Where `key` goes in variant `seed`: FNV-1a of the key, mixed with the seed by splitmix64's
/// finaliser. Fixed here (not std's hasher, which may change between Rust releases), so a kept
/// variant of a commit and a new one of another agree.
fn place(key: &str, seed: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix(h ^ splitmix(u64::from(seed)))
}

/// splitmix64's output function: a bijection that spreads every input bit over the output.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::{Function, ordering, stable_key};

    fn f(name: &str, address: u64) -> Function {
        Function { name: name.into(), address }
    }

    #[test]
    fn keys_drop_rust_hashes_and_keep_c_names() {
        let a = stable_key("_ZN9workloads8baseline9busy_loop17h0123456789abcdefE");
        let b = stable_key("_ZN9workloads8baseline9busy_loop17hfedcba9876543210E");
        assert_eq!(a, "workloads::baseline::busy_loop");
        assert_eq!(a, b);
        assert_eq!(stable_key("sqlite3VdbeExec"), "sqlite3VdbeExec");
    }

    #[test]
    fn two_builds_share_the_order_of_the_functions_they_share() {
        // The same functions under other hashes and addresses, one function more in the second.
        let base = [f("_ZN1a1x17h0000000000000001E", 0), f("_ZN1a1y17h0000000000000002E", 16), f("memcpy_like", 32)];
        let new = [
            f("added_fn", 0),
            f("memcpy_like", 8),
            f("_ZN1a1y17h00000000000000f2E", 24),
            f("_ZN1a1x17h00000000000000f1E", 64),
        ];
        for seed in 1..20 {
            let keys = |text: String| text.lines().map(stable_key).filter(|k| k != "added_fn").collect::<Vec<_>>();
            assert_eq!(keys(ordering(&base, seed)), keys(ordering(&new, seed)), "seed {seed}");
        }
    }

    #[test]
    fn seeds_give_different_orders_of_every_function() {
        let many: Vec<Function> = (0..200).map(|i| f(&format!("fn_{i}"), i * 16)).collect();
        let one = ordering(&many, 1);
        assert_eq!(one.lines().count(), 200);
        assert_ne!(one, ordering(&many, 2));
        assert_eq!(one, ordering(&many, 1));
        // Not the plain order either.
        let plain: String = many.iter().map(|f| format!("{}\n", f.name)).collect();
        assert_ne!(one, plain);
    }
}
