//! The store on real SQLite files: once per run, runners at once, versions.

use super::*;

fn run(id: &str) -> Run {
    Run {
        run_id: id.into(),
        commit: Some("c1".into()),
        parent: None,
        commit_time: Some(1),
        dirty: false,
        schema_version: 2,
        harness_version: "0.1.0".into(),
        configuration: "smoke".into(),
        machine: "m".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        status: "complete".into(),
    }
}

fn point(case: &str) -> Point {
    Point {
        case_id: case.into(),
        metric: "throughput".into(),
        settings: "s".into(),
        value: 10.0,
        forks: vec![9.0, 11.0],
        exact: false,
        higher_is_better: true,
    }
}

#[test]
fn a_run_is_stored_once_and_read_back_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let at = Location::Sqlite(dir.path().join("sub/h.sqlite"));
    let mut store = Store::open(&at).unwrap();
    assert_eq!(store.add(&run("a"), &[point("x"), point("y")], "a.json").unwrap(), Added::New(2));
    assert_eq!(store.add(&run("a"), &[point("x")], "again.json").unwrap(), Added::Already);
    let mut back = Store::open(&at).unwrap().points().unwrap();
    back.sort_by(|a, b| a.point.case_id.cmp(&b.point.case_id));
    assert_eq!(
        back,
        vec![StoredPoint { run: run("a"), point: point("x") }, StoredPoint { run: run("a"), point: point("y") }]
    );
}

#[test]
fn runners_adding_at_once_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let at = Location::Sqlite(dir.path().join("h.sqlite"));
    Store::open(&at).unwrap();
    let added: Vec<Added> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let at = at.clone();
                // Runners 0..4 add runs 0..4; runners 4..8 add the same runs again.
                s.spawn(move || {
                    Store::open(&at).unwrap().add(&run(&format!("r{}", t % 4)), &[point("x")], "r").unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(added.iter().filter(|a| **a == Added::New(1)).count(), 4, "{added:?}");
    let mut store = Store::open(&at).unwrap();
    assert_eq!((store.run_count().unwrap(), store.points().unwrap().len()), (4, 4));
}

#[test]
fn a_store_from_a_newer_harness_is_refused_and_an_older_one_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite");
    // Version 0: what an open that stopped before its first migration leaves.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch("CREATE TABLE history_schema (version BIGINT NOT NULL); INSERT INTO history_schema VALUES (0)")
        .unwrap();
    let mut store = Store::open(&Location::Sqlite(path.clone())).unwrap();
    assert_eq!(store.add(&run("a"), &[point("x")], "a").unwrap(), Added::New(1));
    c.execute("UPDATE history_schema SET version = 99", []).unwrap();
    let e = Store::open(&Location::Sqlite(path)).err().unwrap().to_string();
    assert!(e.contains("has schema version 99; this harness reads versions up to 1"), "{e}");
}

#[test]
fn a_postgres_url_is_shown_without_its_password() {
    let at = Location::parse("postgres://u:hunter22@127.0.0.1:1/x");
    assert_eq!(at.to_string(), "postgres://u:***@127.0.0.1:1/x");
    assert_eq!(Location::parse("sqlite:a/b.db"), Location::Sqlite("a/b.db".into()));
}
