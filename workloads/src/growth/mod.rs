//! Growth workloads: batched inserts into one table that grows from empty to a target size in
//! steps of table size, with what the database did at every step (key index and table size,
//! WAL written, buffer hits and reads): what the choice of key costs once the index outgrows
//! the database's memory. Measured in steps ([`crate::Workload::steps`]), not timed iterations:
//! one fork carries the whole curve.

mod table;

pub use table::{GrowthTable, Layout};

use crate::db::{DB, DbConfig};
use crate::ids::{IdGenerator, IdKind, IdValue, KIND, WORKER_ID};
use crate::params::{ParamKind, ParamSpec};
use crate::{Phase, SetupContext, Workload, WorkloadDef, blocking};
use std::sync::atomic::{AtomicI64, Ordering};

/// `layout`: where the key sits.
pub const LAYOUT: ParamSpec = ParamSpec {
    name: "layout",
    about: "key_pk: the id is the primary key; serial_pk: a serial integer primary key and a unique index on the id",
    kind: ParamKind::Choice(&["key_pk", "serial_pk"]),
    defaults: &["key_pk"],
};

/// `batch_rows`: rows per op.
pub const BATCH_ROWS: ParamSpec = ParamSpec {
    name: "batch_rows",
    about: "rows per op: one INSERT ... SELECT FROM unnest (PostgreSQL) or one transaction of prepared inserts (SQLite)",
    kind: ParamKind::Int { min: 1, max: 100_000 },
    defaults: &["1000"],
};

/// `rows`: the table's size when the run ends.
pub const ROWS: ParamSpec = ParamSpec {
    name: "rows",
    about: "rows when the run ends; auto: on PostgreSQL a 16-byte key's index of 3x shared_buffers (read from the server), on SQLite 1,000,000",
    kind: ParamKind::IntOrAuto { min: 1, max: 1_000_000_000 },
    defaults: &["auto"],
};

/// `db` of the growth workloads: a database that keeps its pages somewhere (WAL file or server).
const GROWTH_DB: ParamSpec = ParamSpec { defaults: &["sqlite_file"], ..DB };

/// Steps per decade of table size.
const STEPS_PER_DECADE: f64 = 10.0;
/// Rows of `rows=auto` on SQLite: its index is then ~15x SQLite's default 2 MB page cache.
const SQLITE_AUTO_ROWS: u64 = 1_000_000;
/// Bytes one 16-byte key takes in a B-tree leaf: 8 (tuple header) + 16 + 4 (line pointer).
const UUID_INDEX_ENTRY_BYTES: u64 = 28;
/// `rows=auto` on PostgreSQL: the key index this many times `shared_buffers`.
const SHARED_BUFFERS_MULTIPLE: u64 = 3;

/// The growth workloads.
pub static WORKLOADS: &[WorkloadDef] = &[WorkloadDef::new(
    "growth/insert_batches",
    "batched inserts into one table growing from empty to `rows`, in steps of table size (rows/s, index and table size, WAL bytes, buffer reads per step)",
    &[KIND, GROWTH_DB, LAYOUT, BATCH_ROWS, ROWS, WORKER_ID],
    |ctx| Ok(blocking(InsertBatches::create(ctx)?)),
).served_by(crate::db::servers).unshared()];

/// Table sizes at which the steps end: `STEPS_PER_DECADE` per decade from one batch up to
/// `target`, each rounded up to whole batches, strictly increasing, the last one `target`
/// rounded up to whole batches.
pub fn step_sizes(batch: u64, target: u64) -> Vec<u64> {
    let batch = batch.max(1);
    let last = target.div_ceil(batch).max(1) * batch;
    let mut sizes: Vec<u64> = vec![];
    for k in 0.. {
        let size = ((batch as f64 * 10f64.powf(k as f64 / STEPS_PER_DECADE)).ceil() as u64).div_ceil(batch) * batch;
        if size >= last {
            break;
        }
        if sizes.last() != Some(&size) {
            sizes.push(size);
        }
    }
    sizes.push(last);
    sizes
}

/// The ops (batches) of each step that grows the table through `sizes`.
pub fn step_ops(batch: u64, sizes: &[u64]) -> Vec<u64> {
    let mut from = 0;
    sizes
        .iter()
        .map(|&to| {
            let ops = (to - from) / batch.max(1);
            from = to;
            ops
        })
        .collect()
}

/// `rows=auto`: see [`ROWS`]; rounded down to two significant digits.
fn auto_rows(table: &GrowthTable) -> anyhow::Result<u64> {
    let rows = match table.shared_buffers_bytes() {
        Some(bytes) => SHARED_BUFFERS_MULTIPLE * bytes / UUID_INDEX_ENTRY_BYTES,
        None => SQLITE_AUTO_ROWS,
    };
    let unit = 10u64.pow(rows.max(1).ilog10().saturating_sub(1));
    Ok(rows / unit * unit)
}

/// `growth/insert_batches`: each op inserts `batch_rows` fresh rows; the table is never emptied.
pub struct InsertBatches {
    table: GrowthTable,
    ids: IdGenerator,
    batch: usize,
    sizes: Vec<u64>,
    rows: AtomicI64,
}

impl InsertBatches {
    /// Creates the empty table and plans the steps up to the target size.
    pub fn create(ctx: &SetupContext) -> anyhow::Result<InsertBatches> {
        let kind = IdKind::from_name(ctx.params.get("kind")?)?;
        let layout = Layout::from_param(ctx.params.get("layout")?);
        let db = DbConfig::from(ctx, 2)?;
        let table = GrowthTable::create(&db, kind, layout)?;
        let batch = ctx.params.count("batch_rows")?;
        let target = match ctx.params.get("rows")? {
            "auto" => auto_rows(&table)?,
            _ => ctx.params.count("rows")? as u64,
        };
        let ids = IdGenerator::new(kind, u16::try_from(ctx.params.int("worker_id")?)?)?;
        let sizes = step_sizes(batch as u64, target);
        Ok(InsertBatches { table, ids, batch, sizes, rows: AtomicI64::new(0) })
    }

    /// Table sizes at which the steps end.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }
}

impl Workload for InsertBatches {
    /// Every op inserts into a bigger table, and reads the clock for time-ordered ids.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = Vec<IdValue>;
    type Output = ();
    fn local(&self, _: usize) -> anyhow::Result<Vec<IdValue>> {
        Ok(Vec::with_capacity(self.batch))
    }
    fn op(&self, ids: &mut Vec<IdValue>) {
        let first = self.rows.fetch_add(self.batch as i64, Ordering::Relaxed);
        ids.clear();
        ids.extend((0..self.batch).map(|_| self.ids.generate()));
        self.table
            .insert(ids, first)
            .unwrap_or_else(|e| self.table.backend().op_failed(format_args!("batch insert failed: {e:#}")));
    }
    fn steps(&self) -> Option<Vec<u64>> {
        Some(step_ops(self.batch as u64, &self.sizes))
    }
    /// After every step: rows, and what the database holds and wrote (see [`GrowthTable::observe`]).
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        let mut observed = vec![("table_rows", self.rows.load(Ordering::Relaxed))];
        observed.extend(self.table.observe()?);
        Ok(observed)
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        let (counted, inserted) = (self.table.count()?, self.rows.load(Ordering::Relaxed));
        anyhow::ensure!(counted == inserted, "table holds {counted} rows after {inserted} inserted ({phase:?})");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.table.teardown()
    }
    /// Every op inserts `batch_rows` rows (PostgreSQL), or runs BEGIN, one insert per row and
    /// COMMIT (SQLite's statement runs).
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.table.tally(self.batch as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_ten_per_decade_in_whole_batches_ending_at_the_target() {
        let sizes = step_sizes(1000, 100_000);
        assert_eq!(sizes.first(), Some(&1000));
        assert_eq!(sizes.last(), Some(&100_000));
        assert!(sizes.windows(2).all(|w| w[0] < w[1] && w[1] % 1000 == 0), "{sizes:?}");
        assert_eq!(&sizes[sizes.len() - 3..], [64_000, 80_000, 100_000]);
        assert_eq!(step_ops(1000, &sizes).iter().sum::<u64>(), 100);
        assert_eq!(step_sizes(1000, 1500), [1000, 2000], "a target between batches is rounded up");
        assert_eq!(step_sizes(1000, 1), [1000]);
    }

    #[test]
    fn step_ops_grow_the_table_through_every_size() {
        assert_eq!(step_ops(10, &[10, 20, 50]), [1, 1, 3]);
    }
}
