//! Which part of the program an instruction belongs to, from the source file it was compiled
//! from (inlined code keeps its own file): SQLite's C, glibc, libpq, OpenSSL, Rust's std, each
//! dependency crate, the workload's code or the measuring loop.

/// The component of an instruction from `file` in `function` of `object`.
pub(crate) fn component(file: &str, function: &str, object: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    if base == "sqlite3.c" {
        return "SQLite (C)".into();
    }
    if let Some(name) = crate_name(file) {
        return name;
    }
    if file.starts_with("/rustc/") || file.starts_with("/rust/deps/") {
        return "Rust std, core, alloc".into();
    }
    if base == "clock_gettime.c" || object.contains("vdso") {
        return "clock reads (vDSO)".into();
    }
    if object.contains("/libpq.so") {
        return "libpq (C)".into();
    }
    if object.contains("/libssl.so") || object.contains("/libcrypto.so") {
        return "OpenSSL (C)".into();
    }
    if object.contains("vgpreload") || object.contains("valgrind") {
        return "valgrind's preload".into();
    }
    let c_library = object.contains("libc.so") || object.contains("ld-linux") || object.contains("libm.so");
    let glibc_names = ["pthread_", "__pthread", "malloc", "free", "mem", "str", "_int_", "__libc"];
    if file.starts_with("./")
        || file.contains("sysdeps")
        || c_library
        || glibc_names.iter().any(|p| function.starts_with(p))
    {
        return "glibc".into();
    }
    if base == "sqlite_select.c" || file.contains("/anchors/") {
        return "the C loop".into();
    }
    if file.contains("workloads/src/") {
        return "the workload's code".into();
    }
    if file.contains("harness/src/") {
        return "the measuring loop".into();
    }
    let object = object.rsplit('/').next().unwrap_or(object);
    format!("other ({})", if base.is_empty() || base == "???" { object } else { base })
}

/// The dependency crate a file of cargo's registry or git checkouts belongs to.
fn crate_name(file: &str) -> Option<String> {
    for marker in ["/registry/src/", "/git/checkouts/"] {
        let Some((_, rest)) = file.split_once(marker) else { continue };
        let dir = rest.split('/').nth(1)?;
        // `name-1.2.3` (registry) or `name-0123abc` (git): the name is what precedes the last `-`.
        let (name, _) = dir.rsplit_once('-')?;
        return Some(name.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::component;

    #[test]
    fn source_files_name_their_component() {
        let c = |file: &str, function: &str, object: &str| component(file, function, object);
        let reg = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f";
        assert_eq!(c(&format!("{reg}/libsqlite3-sys-0.37.0/sqlite3/sqlite3.c"), "sqlite3VdbeExec", "/h"), "SQLite (C)");
        assert_eq!(c(&format!("{reg}/diesel-2.3.4/src/sqlite/connection/mod.rs"), "x", "/h"), "diesel");
        assert_eq!(c(&format!("{reg}/r2d2-0.8.10/src/lib.rs"), "x", "/h"), "r2d2");
        assert_eq!(c("/rustc/17067e9ac6d7/library/alloc/src/vec/mod.rs", "x", "/h"), "Rust std, core, alloc");
        assert_eq!(c("./malloc/malloc.c", "malloc", "/lib/x86_64-linux-gnu/libc.so.6"), "glibc");
        assert_eq!(c("???", "memcpy", "/lib/x86_64-linux-gnu/libc.so.6"), "glibc");
        assert_eq!(c("/work/main/workloads/src/baseline.rs", "x", "/h"), "the workload's code");
        assert_eq!(c("harness/src/worker/measure.rs", "x", "/h"), "the measuring loop");
        assert_eq!(c("/work/main/anchors/sqlite_select.c", "main", "/a"), "the C loop");
        assert_eq!(c("???", "PQexec", "/usr/lib/x86_64-linux-gnu/libpq.so.5.15"), "libpq (C)");
        assert_eq!(c("???", "SSL_read", "/usr/lib/x86_64-linux-gnu/libssl.so.3"), "OpenSSL (C)");
        assert_eq!(c("???", "EVP_x", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"), "OpenSSL (C)");
        assert_eq!(c("???", "x", "/usr/lib/libfoo.so"), "other (libfoo.so)");
    }
}
