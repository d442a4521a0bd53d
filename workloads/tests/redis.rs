//! Redis workloads against a real server: each client reads exactly what it wrote, the tracked
//! near cache follows writes and deletes made by another connection, and an unreachable server
//! is one clear line with the password redacted.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};
use workloads::AsyncWorkload;
use workloads::Phase;
use workloads::cache::Entity;
use workloads::redis::{FredGet, NearRedis, RedisCase, RedisRsGet};

#[test]
#[ignore = "needs Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn each_client_reads_exactly_what_it_wrote_under_its_own_prefix_and_codec() {
    let url = common::redis();
    let case = RedisCase::new(&url, 50);
    let rr = RedisRsGet::create(&case).unwrap();
    let fred = FredGet::create(&case).unwrap();
    rr.verify(Phase::Before).unwrap();
    fred.verify(Phase::Before).unwrap();
    let (rr_keys, fred_keys) = (case.keys("rr"), case.keys("fred"));
    assert!(rr_keys.iter().all(|k| !fred_keys.contains(k)), "prefixes overlap");
    rr.runtime().block_on(async {
        for id in [0usize, 17, 49] {
            assert_eq!(rr.get(&rr_keys[id]).await.unwrap(), Some(Entity::new(id as u64)));
            // The other client's bytes are not this client's codec.
            assert!(rr.get(&fred_keys[id]).await.is_err(), "redis-rs decoded fred's binary value");
        }
    });
    fred.runtime().block_on(async {
        for id in [0usize, 17, 49] {
            assert_eq!(fred.get(&fred_keys[id]).await.unwrap(), Some(Entity::new(id as u64)));
        }
    });
    rr.teardown().unwrap();
    fred.teardown().unwrap();
    rr.runtime().block_on(async { assert_eq!(rr.get(&rr_keys[0]).await.unwrap(), None, "teardown deletes") });
}

/// Reads `id` through the near cache until `want` returns true, for at most two seconds.
fn wait_for(near: &NearRedis, id: u64, want: impl Fn(&Option<Arc<Entity>>) -> bool) -> Option<Arc<Entity>> {
    let deadline = Instant::now() + Duration::from_secs(2);
    near.runtime().block_on(async {
        loop {
            let got = near.near().get(&id).await.unwrap();
            if want(&got) || Instant::now() > deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
}

#[test]
#[ignore = "needs Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn tracked_near_cache_follows_writes_and_deletes_from_another_connection() {
    let url = common::redis();
    let case = RedisCase::new(&url, 10);
    let near = NearRedis::create(&case, false).unwrap();
    near.verify(Phase::Before).unwrap();
    let key = near.key(3);
    let mut other = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    assert_eq!(wait_for(&near, 3, |_| true).as_deref(), Some(&Entity::new(3)));

    let changed = Entity { id: 3, name: "changed-elsewhere".into(), index: 99 };
    let () = redis::cmd("SET").arg(&key).arg(changed.to_binary()).query(&mut other).unwrap();
    let seen = wait_for(&near, 3, |v| v.as_deref() == Some(&changed));
    assert_eq!(seen.as_deref(), Some(&changed), "the front kept its stale copy after another connection's SET");

    let _: i64 = redis::cmd("DEL").arg(&key).query(&mut other).unwrap();
    let seen = wait_for(&near, 3, Option::is_none);
    assert_eq!(seen, None, "the front kept its copy after another connection's DEL");
    near.teardown().unwrap();
}

#[test]
fn unreachable_redis_is_one_clear_line_without_the_password() {
    let case = RedisCase::new("redis://bench:s3cretpw@127.0.0.1:1", 5);
    for e in [
        RedisRsGet::create(&case).err().map(|e| format!("{e:#}")),
        FredGet::create(&case).err().map(|e| format!("{e:#}")),
        NearRedis::create(&case, true).err().map(|e| format!("{e:#}")),
    ] {
        let e = e.expect("port 1 refuses");
        assert!(e.starts_with("cannot connect to Redis at redis://bench:***@127.0.0.1:1: "), "{e}");
        assert!(e.ends_with("start Redis or pass --redis-url (or REDIS_URL)"), "{e}");
        assert!(!e.contains("s3cretpw") && !e.contains('\n'), "{e}");
    }
}

#[test]
#[ignore = "needs Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_get_is_one_round_trip_with_either_client() {
    const OPS: u64 = 50;
    let (url, proxy) = common::redis_through_proxy();
    let case = RedisCase::new(&url, 20);
    let rr = RedisRsGet::create(&case).unwrap();
    let fred = FredGet::create(&case).unwrap();
    let mut rr_local = rr.local(0).unwrap();
    let mut fred_local = fred.local(0).unwrap();
    let mut get_rr = || drop(rr.runtime().block_on(rr.op(&mut rr_local)));
    let mut get_fred = || drop(fred.runtime().block_on(fred.op(&mut fred_local)));
    let clients: [(&str, &mut dyn FnMut()); 2] = [("redis-rs", &mut get_rr), ("fred", &mut get_fred)];
    for (client, op) in clients {
        op();
        let per_op = proxy.per_op(OPS, &mut *op);
        assert_eq!(per_op, 1.0, "{client}: {per_op} round trips per GET");
    }
    drop((rr_local, fred_local));
    rr.teardown().unwrap();
    fred.teardown().unwrap();
}

#[test]
#[ignore = "needs Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn near_cache_hits_never_reach_redis_and_each_miss_loads_once() {
    const OPS: u64 = 40;
    let (url, proxy) = common::redis_through_proxy();
    let case = RedisCase::new(&url, 20);
    for (miss, expected) in [(false, 0.0), (true, 1.0)] {
        let near = NearRedis::create(&case, miss).unwrap();
        let mut local = near.local(0).unwrap();
        // One pass over the keys fills the front.
        for _ in 0..case.cache_size {
            near.runtime().block_on(near.op(&mut local));
        }
        let per_op = proxy.per_op(OPS, || drop(near.runtime().block_on(near.op(&mut local))));
        assert_eq!(per_op, expected, "near cache (miss: {miss}): {per_op} round trips to Redis per op");
        near.teardown().unwrap();
    }
}
