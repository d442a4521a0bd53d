//! ID-table workloads: what the choice of primary-key type costs end to end — generating the
//! id, inserting rows keyed by it, finding rows by name and by key, and how insert cost grows
//! with the table when keys are random rather than time-ordered.

pub mod kinds;
pub mod table;

pub use kinds::{IdGenerator, IdKind, IdValue};
pub use table::{IdsDb, Rows};

use crate::db::postgres::TableCount;
use crate::db::{DB, DbConfig};
use crate::params::{ParamKind, ParamSpec};
use crate::sql::ROW_COUNT;
use crate::{PerOp, Phase, Prepared, SetupContext, Workload, WorkloadDef, blocking};
use std::sync::atomic::{AtomicI64, Ordering};

/// `kind`: the identifier kind.
pub const KIND: ParamSpec = ParamSpec {
    name: "kind",
    about: "identifier kind",
    kind: ParamKind::Choice(&["uuid_v4", "uuid_v7", "ulid", "base62_uuid_v7", "snowflake", "ksuid", "ksuid_millis"]),
    defaults: &["uuid_v4", "uuid_v7", "ulid", "base62_uuid_v7", "snowflake", "ksuid", "ksuid_millis"],
};

/// `worker_id`: the Snowflake worker id.
pub const WORKER_ID: ParamSpec = ParamSpec {
    name: "worker_id",
    about: "Snowflake worker id (0..1023)",
    kind: ParamKind::Int { min: 0, max: 1023 },
    defaults: &["1"],
};

/// `kind` of `ids/generate_spread`: Snowflake by default, the one kind with a per-worker limit.
const SPREAD_KIND: ParamSpec = ParamSpec { defaults: &["snowflake"], ..KIND };

/// `workers`: generators of `ids/generate_spread`, each with its own worker id.
pub const WORKERS: ParamSpec = ParamSpec {
    name: "workers",
    about: "generators taking turns, each with its own worker id (Snowflake: 4,096 ids/ms each)",
    kind: ParamKind::Int { min: 1, max: 1024 },
    defaults: &["16"],
};

/// Snowflake's 12-bit sequence: 4,096 ids per millisecond per worker id.
const SNOWFLAKE_IDS_PER_SEC: f64 = 4_096_000.0;

/// Snowflake cases can generate no more than 4,096 ids per millisecond per worker id.
fn snowflake_ceiling(ctx: &SetupContext) -> Option<crate::def::OpsCeiling> {
    let snowflake = ctx.params.get("kind").is_ok_and(|k| k == "snowflake");
    let workers = ctx.params.int("workers").unwrap_or(1) as f64;
    snowflake.then_some(crate::def::OpsCeiling {
        ops_per_sec: SNOWFLAKE_IDS_PER_SEC * workers,
        why: "Snowflake's 12-bit sequence: 4,096 ids per millisecond per worker id",
    })
}

/// The params of the id-table workloads (and their ORM twins).
pub const TABLE_PARAMS: &[ParamSpec] = &[KIND, ROW_COUNT, DB, WORKER_ID];
/// Connections per fork: one measuring thread needs one; the pool leaves room for checks.
const POOL_SIZE: u32 = 2;

/// The ids group.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new(
        "ids/batch_insert",
        "one transaction inserting row_count fresh rows, then COUNT(*); table emptied before each op, untimed",
        TABLE_PARAMS,
        |ctx| Ok(blocking(BatchInsert::create(&IdsCase::from(ctx)?)?)),
    )
    .served_by(crate::db::servers)
    .unshared(),
    WorkloadDef::new(
        "ids/select_by_name",
        "one transaction counting the rows with a seeded name (name not indexed)",
        TABLE_PARAMS,
        |ctx| Ok(blocking(SelectByName::create(&IdsCase::from(ctx)?)?)),
    )
    .served_by(crate::db::servers),
    WorkloadDef::new("ids/select_by_id", "one transaction fetching one row by primary key", TABLE_PARAMS, |ctx| {
        Ok(blocking(SelectById::create(&IdsCase::from(ctx)?)?))
    })
    .served_by(crate::db::servers),
    WorkloadDef::new(
        "ids/generate",
        "the generator alone, producing the id in its stored form",
        &[KIND, WORKER_ID],
        setup_generate,
    )
    .ceiling(snowflake_ceiling),
    WorkloadDef::new(
        "ids/generate_spread",
        "the generator's cost below Snowflake's limit: `workers` generators, each with its own worker id, taking turns",
        &[SPREAD_KIND, WORKERS],
        setup_generate_spread,
    )
    .ceiling(snowflake_ceiling),
    WorkloadDef::new(
        "ids/insert_growth",
        "single-row inserts into one table that grows through the iterations (table_rows recorded)",
        &[KIND, DB, WORKER_ID],
        |ctx| Ok(blocking(InsertGrowth::create(&IdsCase::from(ctx)?)?)),
    )
    .served_by(crate::db::servers),
];

/// The settings of an id case.
#[derive(Debug, Clone)]
pub struct IdsCase {
    /// Kind.
    pub kind: IdKind,
    /// Rows per op (batch insert) or seeded (selects).
    pub row_count: usize,
    /// Backend.
    pub db: DbConfig,
    /// Snowflake worker id.
    pub worker_id: u16,
}

impl IdsCase {
    /// Reads a case's params; `row_count` is 0 where the workload does not declare it.
    pub fn from(ctx: &SetupContext) -> anyhow::Result<IdsCase> {
        Ok(IdsCase {
            kind: IdKind::from_name(ctx.params.get("kind")?)?,
            row_count: if ctx.params.0.contains_key("row_count") { ctx.params.count("row_count")? } else { 0 },
            db: DbConfig::from(ctx, POOL_SIZE)?,
            worker_id: u16::try_from(ctx.params.int("worker_id")?)?,
        })
    }

    pub(crate) fn generator(&self) -> anyhow::Result<IdGenerator> {
        IdGenerator::new(self.kind, self.worker_id)
    }
}

fn setup_generate(ctx: &SetupContext) -> anyhow::Result<Box<dyn Prepared>> {
    let kind = IdKind::from_name(ctx.params.get("kind")?)?;
    Ok(blocking(Generate(IdGenerator::new(kind, u16::try_from(ctx.params.int("worker_id")?)?)?)))
}

fn setup_generate_spread(ctx: &SetupContext) -> anyhow::Result<Box<dyn Prepared>> {
    let kind = IdKind::from_name(ctx.params.get("kind")?)?;
    let workers = u16::try_from(ctx.params.int("workers")?)?;
    let generators = (0..workers).map(|w| IdGenerator::new(kind, w)).collect::<anyhow::Result<Vec<_>>>()?;
    Ok(blocking(GenerateSpread(generators)))
}

/// `ids/generate_spread`: generators with their own worker ids, taking turns, so that the
/// scheme's per-worker limit sits far above what one measurer can reach.
pub struct GenerateSpread(pub Vec<IdGenerator>);

impl Workload for GenerateSpread {
    /// Only random UUIDs read no clock.
    fn deterministic(&self) -> bool {
        self.0[0].kind() == IdKind::UuidV4
    }
    type Local = usize;
    type Output = IdValue;
    fn local(&self, thread: usize) -> anyhow::Result<usize> {
        Ok(thread % self.0.len())
    }
    fn op(&self, turn: &mut usize) -> IdValue {
        let id = self.0[*turn].generate();
        *turn = if *turn + 1 == self.0.len() { 0 } else { *turn + 1 };
        id
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        let mut turn = 0;
        let ids: Vec<IdValue> = (0..1000).map(|_| self.op(&mut turn)).collect();
        for id in &ids {
            self.0[0].check_form(id)?;
        }
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        anyhow::ensure!(unique.len() == ids.len(), "{} duplicate ids in 1000", ids.len() - unique.len());
        Ok(())
    }
}

/// `ids/generate`.
pub struct Generate(pub IdGenerator);

impl Workload for Generate {
    /// Only random UUIDs read no clock.
    fn deterministic(&self) -> bool {
        self.0.kind() == IdKind::UuidV4
    }
    crate::workload::no_local_state!();
    type Output = IdValue;
    fn op(&self, _: &mut ()) -> IdValue {
        self.0.generate()
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        let ids: Vec<IdValue> = (0..1000).map(|_| self.0.generate()).collect();
        for id in &ids {
            self.0.check_form(id)?;
        }
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        anyhow::ensure!(unique.len() == ids.len(), "{} duplicate ids in 1000", ids.len() - unique.len());
        Ok(())
    }
}

/// `ids/batch_insert`: every op inserts `row_count` rows into an empty table.
pub struct BatchInsert {
    table: IdsDb,
    ids: IdGenerator,
    row_count: usize,
}

impl BatchInsert {
    /// Creates the empty table.
    pub fn create(case: &IdsCase) -> anyhow::Result<BatchInsert> {
        Ok(BatchInsert {
            table: IdsDb::create(&case.db, case.kind)?,
            ids: case.generator()?,
            row_count: case.row_count,
        })
    }

    /// One op as measured: fresh ids, one insert transaction, the count.
    pub fn insert_batch(&self) -> anyhow::Result<i64> {
        self.table.batch_insert(&Rows::generate(self.row_count, || self.ids.generate()))
    }
}

/// A workload that inserts one batch of fresh keys per op into a table emptied before it,
/// untimed (`ids/batch_insert` and its Diesel twin): what they differ in. The [`Workload`] is
/// theirs in common.
pub trait BatchInserts: Send + Sync + 'static {
    /// The op's name in a failure message (`batch insert`).
    const OP: &'static str;
    /// The kind's table.
    fn table(&self) -> &IdsDb;
    /// Rows per batch.
    fn row_count(&self) -> usize;
    /// One op as measured: fresh ids, the insert and the count; returns the count.
    fn insert_batch(&self) -> anyhow::Result<i64>;
    /// The counts a server keeps of one op's work (see [`Workload::tally`]).
    fn batch_tally(&self) -> anyhow::Result<Vec<crate::Tally>>;
}

impl<T: BatchInserts> Workload for T {
    /// Generates ids (most kinds read a clock), and the keys' values decide the index path of
    /// every insert (random UUIDs included).
    fn deterministic(&self) -> bool {
        false
    }
    crate::workload::no_local_state!();
    type Output = i64;
    const RESET_PER_OP: bool = true;
    fn reset(&self, _: &mut ()) -> anyhow::Result<()> {
        self.table().clear()
    }
    fn op(&self, _: &mut ()) -> i64 {
        self.insert_batch()
            .unwrap_or_else(|e| self.table().db.backend().op_failed(format_args!("{} failed: {e:#}", T::OP)))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        check_batch_insert(self.table(), self.row_count(), || self.insert_batch())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.table().teardown()
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.batch_tally()
    }
}

impl BatchInserts for BatchInsert {
    const OP: &'static str = "batch insert";
    fn table(&self) -> &IdsDb {
        &self.table
    }
    fn row_count(&self) -> usize {
        self.row_count
    }
    fn insert_batch(&self) -> anyhow::Result<i64> {
        BatchInsert::insert_batch(self)
    }
    /// Every op inserts `row_count` rows (the untimed emptying inserts none).
    fn batch_tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let mut tallies = self.table.tally(&[(TableCount::RowsInserted, PerOp::Exactly(self.row_count as i64))])?;
        // BEGIN, an INSERT per row, the COUNT, COMMIT (SQLite runs each as a prepared statement).
        tallies.extend(self.table.db.statement_tally(self.row_count as i64 + 3)?);
        Ok(tallies)
    }
}

/// The check of a batch-insert workload: from an empty table, one batch leaves exactly
/// `row_count` rows whose ids read back, and the table is emptied again.
pub(crate) fn check_batch_insert(
    table: &IdsDb,
    row_count: usize,
    insert_batch: impl FnOnce() -> anyhow::Result<i64>,
) -> anyhow::Result<()> {
    table.clear()?;
    let n = insert_batch()?;
    anyhow::ensure!(n == row_count as i64, "batch insert left {n} rows, expected {row_count}");
    let stored = table.ids_in_stored_order()?;
    anyhow::ensure!(stored.len() == row_count, "{} ids read back", stored.len());
    table.clear()
}

/// A table seeded with `row_count` rows that stays seeded while it is measured.
pub(crate) struct Seeded {
    pub(crate) table: IdsDb,
    pub(crate) rows: Rows,
}

impl Seeded {
    pub(crate) fn create(case: &IdsCase) -> anyhow::Result<Seeded> {
        let table = IdsDb::create(&case.db, case.kind)?;
        let generator = case.generator()?;
        let rows = Rows::generate(case.row_count, || generator.generate());
        let n = table.batch_insert(&rows)?;
        anyhow::ensure!(n == case.row_count as i64, "seeding left {n} rows, expected {}", case.row_count);
        Ok(Seeded { table, rows })
    }

    /// The table still holds exactly the seeded rows.
    pub(crate) fn check_count(&self) -> anyhow::Result<()> {
        let n = self.table.count()?;
        anyhow::ensure!(n == self.rows.ids.len() as i64, "table holds {n} rows, seeded {}", self.rows.ids.len());
        Ok(())
    }

    /// Indices of a sample of the seeded rows: first, last and evenly spaced, at most ~200.
    pub(crate) fn sample(&self) -> impl Iterator<Item = usize> {
        let n = self.rows.ids.len();
        (0..n).step_by((n / 200).max(1)).chain(n.checked_sub(1))
    }
}

/// `ids/select_by_name`.
pub struct SelectByName(Seeded);

impl SelectByName {
    /// Seeds the table.
    pub fn create(case: &IdsCase) -> anyhow::Result<SelectByName> {
        Ok(SelectByName(Seeded::create(case)?))
    }

    /// One op as measured.
    pub fn count(&self, name: &str) -> anyhow::Result<i64> {
        self.0.table.count_by_name(name)
    }
}

impl Workload for SelectByName {
    /// The scan visits rows in rowid order, the same every run, except for Snowflake ids on
    /// SQLite: an integer primary key *is* the rowid, so the generated values shape the table.
    /// PostgreSQL is a server.
    fn deterministic(&self) -> bool {
        self.0.table.kind() != IdKind::Snowflake && !matches!(self.0.table.db.backend(), crate::db::Backend::Postgres)
    }
    type Local = usize;
    type Output = i64;
    fn local(&self, thread: usize) -> anyhow::Result<usize> {
        Ok(thread.wrapping_mul(7919) % self.0.rows.names.len().max(1))
    }
    fn op(&self, next: &mut usize) -> i64 {
        let name = &self.0.rows.names[*next];
        *next = if *next + 1 == self.0.rows.names.len() { 0 } else { *next + 1 };
        self.count(name).unwrap_or_else(|e| {
            self.0.table.db.backend().op_failed(format_args!("select by name {name} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.0.check_count()?;
        for i in self.0.sample() {
            let name = &self.0.rows.names[i];
            let n = self.count(name)?;
            anyhow::ensure!(n == 1, "select by name {name} counted {n} rows, expected 1");
        }
        let n = self.count("entity-absent")?;
        anyhow::ensure!(n == 0, "select by an absent name counted {n} rows");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.0.table.teardown()
    }
    /// Every op scans the table (at least once: a parallel plan counts each worker's scan).
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let mut tallies = self.0.table.tally(&[(TableCount::Scans, PerOp::AtLeast(1))])?;
        tallies.extend(self.0.table.db.statement_tally(3)?);
        Ok(tallies)
    }
}

/// `ids/select_by_id`.
pub struct SelectById(Seeded);

impl SelectById {
    /// Seeds the table.
    pub fn create(case: &IdsCase) -> anyhow::Result<SelectById> {
        Ok(SelectById(Seeded::create(case)?))
    }

    /// One op as measured.
    pub fn fetch(&self, id: &IdValue) -> anyhow::Result<Option<(String, i32)>> {
        self.0.table.select_by_id(id)
    }
}

impl Workload for SelectById {
    /// The keys are random or time-based, so the B-tree a lookup walks differs every run.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = usize;
    type Output = Option<(String, i32)>;
    fn local(&self, thread: usize) -> anyhow::Result<usize> {
        Ok(thread.wrapping_mul(7919) % self.0.rows.ids.len().max(1))
    }
    fn op(&self, next: &mut usize) -> Option<(String, i32)> {
        let id = &self.0.rows.ids[*next];
        *next = if *next + 1 == self.0.rows.ids.len() { 0 } else { *next + 1 };
        self.fetch(id)
            .unwrap_or_else(|e| self.0.table.db.backend().op_failed(format_args!("select by id {id:?} failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.0.check_count()?;
        let rows = &self.0.rows;
        for i in self.0.sample() {
            let found = self.fetch(&rows.ids[i])?;
            anyhow::ensure!(
                found.as_ref() == Some(&(rows.names[i].clone(), rows.scores[i])),
                "select by id {:?} returned {found:?}, expected ({}, {})",
                rows.ids[i],
                rows.names[i],
                rows.scores[i]
            );
        }
        let absent = IdGenerator::new(self.0.table.kind(), 0)?.generate();
        anyhow::ensure!(self.fetch(&absent)?.is_none(), "an id never inserted was found");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.0.table.teardown()
    }
    /// Every op looks its key up once.
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let mut tallies = self.0.table.tally(&[(TableCount::Scans, PerOp::Exactly(1))])?;
        tallies.extend(self.0.table.db.statement_tally(3)?);
        Ok(tallies)
    }
}

/// `ids/insert_growth`: single-row inserts; the table is never emptied.
pub struct InsertGrowth {
    table: IdsDb,
    ids: IdGenerator,
    rows: AtomicI64,
}

impl InsertGrowth {
    /// Creates the empty table.
    pub fn create(case: &IdsCase) -> anyhow::Result<InsertGrowth> {
        Ok(InsertGrowth { table: IdsDb::create(&case.db, case.kind)?, ids: case.generator()?, rows: AtomicI64::new(0) })
    }
}

impl Workload for InsertGrowth {
    /// Every op inserts into a different, growing table.
    fn deterministic(&self) -> bool {
        false
    }
    crate::workload::no_local_state!();
    type Output = ();
    fn op(&self, _: &mut ()) {
        let seq = self.rows.fetch_add(1, Ordering::Relaxed);
        let id = self.ids.generate();
        self.table
            .insert_one(&id, &format!("entity-{seq}"), (seq % 100) as i32)
            .unwrap_or_else(|e| self.table.db.backend().op_failed(format_args!("insert of {id:?} failed: {e:#}")));
    }
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(vec![("table_rows", self.rows.load(Ordering::Relaxed))])
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        let (counted, inserted) = (self.table.count()?, self.rows.load(Ordering::Relaxed));
        anyhow::ensure!(counted == inserted, "table holds {counted} rows after {inserted} inserts");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.table.teardown()
    }
    /// Every op inserts one row.
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let mut tallies = self.table.tally(&[(TableCount::RowsInserted, PerOp::Exactly(1))])?;
        tallies.extend(self.table.db.statement_tally(1)?);
        Ok(tallies)
    }
}
