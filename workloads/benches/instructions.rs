//! The harness's in-process workloads under iai-callgrind: instructions of 1000 ops after 100
//! uncounted ones, so divide the totals by 1000 for instructions per op.
//! `cargo bench -p workloads --bench instructions` (needs `iai-callgrind-runner` 0.16.1 on PATH,
//! see the README).

#![allow(missing_docs, reason = "iai-callgrind's macros generate undocumented items")]

mod common;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use std::hint::black_box;

/// Ops counted per benchmark.
const OPS: u64 = 1000;

/// Sets up the case of `common::CASES` named `name` and runs 100 uncounted ops.
fn setup(name: &str) -> common::Ready {
    let (_, params) = common::CASES.iter().find(|(n, _)| *n == name).expect("a listed case");
    let mut case = common::ready(name, params);
    case.bench.run_batch(OPS / 10);
    case
}

#[library_benchmark]
#[bench::noop(args = ("baseline/noop"), setup = setup)]
#[bench::busy_loop(args = ("baseline/busy_loop"), setup = setup)]
#[bench::moka_hit(args = ("cache/moka_hit"), setup = setup)]
#[bench::hashmap_hit(args = ("cache/hashmap_hit"), setup = setup)]
#[bench::thread_select_by_id(args = ("sql/thread_select_by_id"), setup = setup)]
fn ops_1000(mut case: common::Ready) -> common::Ready {
    case.bench.run_batch(black_box(OPS));
    case
}

library_benchmark_group!(name = in_process; benchmarks = ops_1000);
main!(library_benchmark_groups = in_process);
