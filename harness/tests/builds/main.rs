//! The tests that build other commits of a clone of this workspace (`harness ab`, `harness
//! bisect`, `harness history run` and `confirm`), in one binary so that cargo runs them side by
//! side: each is a few cargo builds and short runs, none asserts a time, and one after the
//! other they were half of the suite's time.

#[path = "../common/mod.rs"]
mod common;

mod ab;
mod bisect;
mod confirm;
