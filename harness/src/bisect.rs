//! `harness bisect`'s search, pure: the first-parent commits from GOOD to BAD, each marked good,
//! bad or skipped as it is tested, the next one to test, and what the marks say.

use serde::{Deserialize, Serialize};

/// What a test said of a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mark {
    /// It has not regressed.
    Good,
    /// It has.
    Bad,
    /// It could not be tested (it does not build, or its case fails): why.
    Skipped(String),
    /// Its test could not decide (its interval straddles the band at the step's budget).
    Undecided,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// The first bad commit (its index).
    Found(usize),
    /// The first bad commit is one of these (indexes, in order): the ones between could not be
    /// tested or decided.
    Range(Vec<usize>),
}

/// The commits GOOD (index 0) .. BAD (the last), and the marks of those tested so far.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    marks: Vec<Option<Mark>>,
}

impl Search {
    /// A search over `count` commits, GOOD first and BAD last (marked so).
    pub(crate) fn new(count: usize) -> Search {
        let mut marks = vec![None; count.max(2)];
        marks[0] = Some(Mark::Good);
        let last = marks.len() - 1;
        marks[last] = Some(Mark::Bad);
        Search { marks }
    }

    /// Records what commit `i`'s test said.
    pub(crate) fn mark(&mut self, i: usize, mark: Mark) {
        self.marks[i] = Some(mark);
    }

    /// The last good commit before the first bad one, and that first bad one.
    fn window(&self) -> (usize, usize) {
        let bad = (0..self.marks.len()).find(|&i| self.marks[i] == Some(Mark::Bad)).unwrap_or(self.marks.len() - 1);
        let good = (0..bad).rev().find(|&i| self.marks[i] == Some(Mark::Good)).unwrap_or(0);
        (good, bad)
    }

    /// The untested commit nearest the middle of the window, or none when every commit in it
    /// was tested.
    pub(crate) fn next(&self) -> Option<usize> {
        let (good, bad) = self.window();
        let middle = (good + bad) / 2;
        (good + 1..bad).filter(|&i| self.marks[i].is_none()).min_by_key(|&i| (i.abs_diff(middle), i))
    }

    /// What the marks say (meaningful once [`Search::next`] is none, or to stop early).
    pub(crate) fn outcome(&self) -> Outcome {
        let (good, bad) = self.window();
        if bad == good + 1 { Outcome::Found(bad) } else { Outcome::Range((good + 1..=bad).collect()) }
    }
}

/// The most tests a search over `count` commits (GOOD and BAD included) makes between them, when
/// none is skipped: ⌈log2(count - 1)⌉.
pub(crate) fn max_steps(count: usize) -> u32 {
    let between = count.saturating_sub(1).max(1);
    usize::BITS - (between - 1).leading_zeros()
}

/// The level each test of a search runs at so that the chance of any wrong step, hence of a
/// wrong answer, is at most `alpha` (Bonferroni over the GOOD-to-BAD check and every step).
pub(crate) fn step_alpha(alpha: f64, count: usize) -> f64 {
    alpha / f64::from(max_steps(count) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search where commits from `first_bad` on are bad and `skipped` cannot be tested.
    fn search(count: usize, first_bad: usize, skipped: &[usize]) -> (Outcome, usize) {
        let mut s = Search::new(count);
        let mut tests = 0;
        while let Some(i) = s.next() {
            tests += 1;
            let mark = if skipped.contains(&i) {
                Mark::Skipped("does not build".into())
            } else if i >= first_bad {
                Mark::Bad
            } else {
                Mark::Good
            };
            s.mark(i, mark);
        }
        (s.outcome(), tests)
    }

    #[test]
    fn the_first_bad_commit_is_found_in_at_most_log2_steps() {
        for count in 2..40 {
            for first_bad in 1..count {
                let (outcome, tests) = search(count, first_bad, &[]);
                assert_eq!(outcome, Outcome::Found(first_bad), "{count} commits, first bad {first_bad}");
                assert!(tests as u32 <= max_steps(count), "{count}: {tests} tests > {}", max_steps(count));
            }
        }
    }

    #[test]
    fn a_skipped_commit_is_stepped_around_or_left_in_the_range() {
        assert_eq!(search(17, 9, &[5]).0, Outcome::Found(9), "a skipped commit away from the answer is stepped around");
        assert_eq!(search(17, 9, &[8]).0, Outcome::Range(vec![8, 9]), "the last good one skipped: it or the next");
        assert_eq!(search(17, 9, &[9]).0, Outcome::Range(vec![9, 10]), "the answer itself skipped: it or the next");
    }

    #[test]
    fn the_step_level_splits_alpha_over_every_test() {
        assert_eq!(max_steps(2), 0);
        assert_eq!(max_steps(3), 1);
        assert_eq!(max_steps(17), 4);
        assert_eq!(max_steps(18), 5);
        assert!((step_alpha(0.05, 17) - 0.01).abs() < 1e-12);
    }
}
