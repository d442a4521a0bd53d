//! Hidden workloads with a known change planted in them, for `harness explain` to find:
//! `planted/select` selects one row by id from an in-memory SQLite table per op, and its
//! `plant` param adds one thing per op in a function of its own: an extra statement
//! (`extra_statement`), an extra allocation (`extra_allocation`) or a cloned `Vec`
//! (`clone_vec`). `plant=none` against another value is the change, the function its cause.

use crate::params::{ParamKind, ParamSpec};
use crate::{Workload, WorkloadDef, blocking};
use rusqlite::Connection;
use std::hint::black_box;

/// Rows of the table each measuring thread selects from.
const ROWS: i64 = 100;

/// The planted group (hidden: `--hidden` lists it).
pub static WORKLOADS: &[WorkloadDef] = &[WorkloadDef::new(
    "planted/select",
    "select one row by id from in-memory SQLite; `plant` adds a statement, an allocation or a Vec clone per op",
    &[PLANT],
    |ctx| {
        let plant = match ctx.params.get("plant")? {
            "statement" => Plant::Statement,
            "allocation" => Plant::Allocation,
            "vec_clone" => Plant::VecClone,
            _ => Plant::None,
        };
        Ok(blocking(Planted { plant, values: (0..256).collect() }))
    },
)
.hidden()];

const PLANT: ParamSpec = ParamSpec {
    name: "plant",
    about: "what each op does on top of its select",
    kind: ParamKind::Choice(&["none", "statement", "allocation", "vec_clone"]),
    defaults: &["none"],
};

/// What an op adds to its select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// Nothing.
    None,
    /// A second statement.
    Statement,
    /// A heap allocation of 64 bytes.
    Allocation,
    /// A clone of a 256-element `Vec<u64>`.
    VecClone,
}

/// The workload: a planted change over a select by id.
pub struct Planted {
    plant: Plant,
    values: Vec<u64>,
}

/// A measuring thread's connection and the next id it selects.
pub struct Local {
    conn: Connection,
    next: i64,
}

impl Workload for Planted {
    type Local = Local;
    type Output = i64;
    fn local(&self, _: usize) -> anyhow::Result<Local> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch("CREATE TABLE planted (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)")?;
        for id in 1..=ROWS {
            conn.execute("INSERT INTO planted (id, value) VALUES (?1, ?2)", [id, id * 7])?;
        }
        Ok(Local { conn, next: 0 })
    }

    fn op(&self, local: &mut Local) -> i64 {
        local.next = local.next % ROWS + 1;
        let value = select(&local.conn, local.next);
        match self.plant {
            Plant::None => value,
            Plant::Statement => value + extra_statement(&local.conn, local.next),
            Plant::Allocation => value + extra_allocation(local.next),
            Plant::VecClone => value + clone_vec(&self.values),
        }
    }
}

/// The op's own statement: the row's value.
fn select(conn: &Connection, id: i64) -> i64 {
    let mut statement = conn.prepare_cached("SELECT value FROM planted WHERE id = ?1").expect("prepare");
    statement.query_row([id], |row| row.get(0)).expect("the row exists")
}

/// The planted statement: one more select per op.
#[inline(never)]
pub fn extra_statement(conn: &Connection, id: i64) -> i64 {
    let mut statement = conn.prepare_cached("SELECT id FROM planted WHERE id = ?1").expect("prepare");
    statement.query_row([id], |row| row.get::<_, i64>(0)).expect("the row exists") - id
}

/// The planted allocation: 64 bytes on the heap per op.
#[inline(never)]
pub fn extra_allocation(id: i64) -> i64 {
    let boxed = black_box(Box::new([id as u8; 64]));
    i64::from(boxed[63]) - i64::from(id as u8)
}

/// The planted clone: a 256-element `Vec` copied per op.
#[inline(never)]
pub fn clone_vec(values: &[u64]) -> i64 {
    let copy = black_box(values.to_vec());
    (copy.len() as i64) - 256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plant_returns_the_selected_value() {
        for plant in [Plant::None, Plant::Statement, Plant::Allocation, Plant::VecClone] {
            let w = Planted { plant, values: (0..256).collect() };
            let mut local = w.local(0).unwrap();
            assert_eq!(w.op(&mut local), 7, "{plant:?}: id 1's value");
            assert_eq!(w.op(&mut local), 14, "{plant:?}: id 2's value");
        }
    }
}
