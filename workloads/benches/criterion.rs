//! The harness's in-process workloads under criterion, in this process (no fork per sample):
//! `cargo bench -p workloads --bench criterion`. Criterion reports time per op; the harness
//! reports ops/s = 1e9 / (ns per op).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::time::Instant;

fn in_process(c: &mut Criterion) {
    for (name, params) in common::CASES {
        let mut case = common::ready(name, params);
        c.bench_function(&case.label, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                case.bench.run_batch(iters);
                start.elapsed()
            })
        });
        drop(case.bench);
        case.prepared.verify(workloads::Phase::After).expect("check after measuring");
        case.prepared.teardown().expect("teardown");
    }
}

criterion_group!(benches, in_process);
criterion_main!(benches);
