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
    assert!(e.contains("has schema version 99; this harness reads versions up to 2"), "{e}");
}

#[test]
fn a_version_1_store_keeps_its_runs_and_gains_confirmations_each_decided_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite");
    // What the harness of the first history slice wrote: version 1, with a run in it.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(&MIGRATIONS[0].replace("@ID@", "INTEGER PRIMARY KEY")).unwrap();
    c.execute_batch("CREATE TABLE history_schema (version BIGINT NOT NULL); INSERT INTO history_schema VALUES (1)")
        .unwrap();
    c.execute(
        "INSERT INTO history_runs (run_id, dirty, schema_version, harness_version, configuration, machine, started_at, status, source, added_at) \
         VALUES ('old', 0, 2, '0.1.0', 'smoke', 'm', 't', 'complete', 'old.json', 't')",
        [],
    )
    .unwrap();
    let mut store = Store::open(&Location::Sqlite(path.clone())).unwrap();
    assert_eq!(store.run_count().unwrap(), 1, "the old run is kept");
    let version: i64 = c.query_row("SELECT version FROM history_schema", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 2);
    let key = crate::history::SeriesKey {
        case_id: "x".into(),
        metric: "throughput".into(),
        machine: "m".into(),
        settings: "s".into(),
    };
    let decided = Confirmation {
        key,
        last_good: "a".into(),
        first_bad: "b".into(),
        outcome: Outcome::Layout,
        commit: None,
        detail: "-0.3% [-1.2%, +0.6%]".into(),
        evidence: Some("ab.json".into()),
    };
    assert!(store.record(&decided).unwrap());
    let again = Confirmation { outcome: Outcome::Confirmed, ..decided.clone() };
    assert!(!store.record(&again).unwrap(), "a change point is decided once");
    assert_eq!(Store::open(&Location::Sqlite(path)).unwrap().confirmations().unwrap(), vec![decided]);
}

#[test]
fn a_postgres_url_is_shown_without_its_password() {
    let at = Location::parse("postgres://u:hunter22@127.0.0.1:1/x");
    assert_eq!(at.to_string(), "postgres://u:***@127.0.0.1:1/x");
    assert_eq!(Location::parse("sqlite:a/b.db"), Location::Sqlite("a/b.db".into()));
}
