//! A bisection as people read it: the commits tested, with what each measured, then the answer
//! (the first bad commit and its effect, the range left, or no regression).

use super::{Answer, Bisection, Step, short};
use crate::bisect::Mark;
use crate::metric::Metric;

/// The search for people: the tested commits, then the answer.
pub(super) fn render(b: &Bisection) -> String {
    let shown = |s: &Step| shown(b.metric, s);
    let mark = |m: &Option<Mark>| match m {
        Some(Mark::Good) => "good".to_string(),
        Some(Mark::Bad) => "bad".into(),
        Some(Mark::Undecided) => "undecided".into(),
        Some(Mark::Skipped(why)) => format!("skipped: {why}"),
        None => String::new(),
    };
    let mut rows = vec![vec!["commit".to_string(), "subject".into(), b.metric.name().into(), "step".into()]];
    for s in b.steps.iter().filter(|s| s.mark.is_some()) {
        rows.push(vec![short(&s.commit).into(), s.subject.chars().take(60).collect(), shown(s), mark(&s.mark)]);
    }
    let mut out = format!("harness bisect: {} by {}: {}\n\n", b.case, b.metric.name(), rule(b));
    out.push_str(&crate::format::table(&rows, |_| false));
    out.push('\n');
    for s in b.steps.iter().filter(|s| !s.changes.is_empty()) {
        out.push_str(&format!("{}: {}\n", short(&s.commit), s.changes.join("; ")));
    }
    out.push_str(&answer(b, &shown));
    out
}

/// What a step's test measured, in a table cell.
fn shown(metric: Metric, s: &Step) -> String {
    match (metric, s.value, s.interval, &s.detail) {
        (Metric::Instructions, Some(v), _, _) => format!("{} instructions/op", crate::format::si(v)),
        (Metric::Io | Metric::Alloc, _, _, Some(detail)) => detail.clone(),
        (Metric::Throughput, Some(r), Some((lo, hi)), _) => format!("{r:.3}x GOOD [{lo:.3}, {hi:.3}]"),
        _ => "-".into(),
    }
}

/// How the search decides, and how often it can be wrong.
fn rule(b: &Bisection) -> String {
    match b.metric {
        Metric::Instructions => format!(
            "a commit is {} past {}{}% instructions per op against GOOD (counts of deterministic workloads are exact: no step can err by noise)",
            if b.faster { "faster" } else { "bad" },
            if b.faster { "-" } else { "+" },
            b.threshold_pct
        ),
        Metric::Io => format!(
            "a commit is bad when its I/O counts per op grew over GOOD's as `compare --metric io` judges them (exact counts by any amount, bytes and rows past {}%)",
            b.threshold_pct
        ),
        Metric::Alloc => format!(
            "a commit is {} when its allocations or bytes per op moved past {}{}% of GOOD's, as `compare --metric alloc` judges them",
            if b.faster { "faster" } else { "bad" },
            if b.faster { "-" } else { "+" },
            b.threshold_pct
        ),
        Metric::Latency => "latency is not bisected".into(),
        Metric::Throughput => format!(
            "at most {:.0}% chance of a wrong answer (each of its tests at {:.4}: alpha over ⌈log2 n⌉ + 1 tests); BAD is bad past -{}%, a commit between past the midpoint of GOOD and BAD{}",
            b.alpha * 100.0,
            b.step_alpha,
            b.threshold_pct,
            b.layouts.map_or(String::new(), |k| format!("; fork pairs spread over {k} code layouts"))
        ),
    }
}

/// The answer line(s): the first bad commit with its effect, the range left, or no regression.
fn answer(b: &Bisection, shown: &dyn Fn(&Step) -> String) -> String {
    let (good, bad) = (&b.steps[0], &b.steps[b.steps.len() - 1]);
    let (what, first, slower) = if b.faster {
        ("improvement", "first faster commit", "faster")
    } else {
        ("regression", "first bad commit", "slower")
    };
    match b.outcome {
        Some(Answer::NoRegression) => {
            let (bad_at, good_at) = (short(&bad.commit), short(&good.commit));
            let (shown_bad, shown_good) = (shown(bad), shown(good));
            if bad.mark == Some(Mark::Undecided) {
                format!(
                    "no {what} found: BAD ({bad_at}) against GOOD ({good_at}) is not significant at level {:.4} within the budget of fork pairs ({shown_bad} against {shown_good}): nothing to bisect; rerun with a larger --max-forks to look closer\n",
                    b.step_alpha
                )
            } else {
                format!(
                    "no {what} found: BAD ({bad_at}) is not {slower} than GOOD ({good_at}) beyond {}%: {shown_bad} against {shown_good}\n",
                    b.threshold_pct
                )
            }
        }
        Some(Answer::Found) => {
            let i = b.steps.iter().position(|s| s.commit == b.first_bad[0]).unwrap_or(0);
            let before = b.steps[..i].iter().rev().find(|s| s.mark == Some(Mark::Good)).unwrap_or(good);
            let found = &b.steps[i];
            let mut text = format!(
                "{first}: {} {}\n  {} against {} at its last good ancestor {}\n",
                found.commit,
                found.subject,
                shown(found),
                shown(before),
                short(&before.commit)
            );
            text.push_str(&in_steps(b, before, found));
            text
        }
        _ => {
            let names: Vec<String> = b.first_bad.iter().map(|c| short(c).to_string()).collect();
            format!(
                "undecided: the {first} is one of {} (skipped or undecided between); test them by hand or rerun with a larger --max-forks\n",
                names.join(", ")
            )
        }
    }
}

/// Says so when the found commit carries much less than the whole GOOD-to-BAD change.
fn in_steps(b: &Bisection, before: &Step, found: &Step) -> String {
    let (good, bad) = (&b.steps[0], &b.steps[b.steps.len() - 1]);
    let level = |s: &Step| match b.metric {
        Metric::Instructions | Metric::Alloc => s.value,
        Metric::Throughput => s.value.map(|r| 1.0 / r),
        Metric::Io | Metric::Latency => None,
    };
    let (Some(g), Some(x), Some(y), Some(z)) = (level(good), level(before), level(found), level(bad)) else {
        return String::new();
    };
    let (step, whole) = ((y / x).ln(), (z / g).ln());
    if whole != 0.0 && step / whole < 0.5 {
        let others: Vec<&str> = b
            .steps
            .iter()
            .filter(|s| s.mark == Some(Mark::Bad) && s.commit != found.commit)
            .map(|s| short(&s.commit))
            .collect();
        return format!(
            "  the {} came in steps: this commit carries {:+.1}% of GOOD to BAD's {:+.1}%; the other bad commits tested: {}\n",
            if b.faster { "improvement" } else { "regression" },
            100.0 * (step.exp() - 1.0),
            100.0 * (whole.exp() - 1.0),
            if others.is_empty() { "none".into() } else { others.join(", ") }
        );
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::{Bisection, render};

    /// A throughput search that stopped after GOOD against BAD, BAD marked `mark`.
    fn stopped(mark: &str) -> Bisection {
        serde_json::from_value(serde_json::json!({
            "metric": "throughput", "alpha": 0.05, "step_alpha": 0.0125, "threshold_pct": 1.0,
            "case": "baseline/busy_loop[work=1000]",
            "steps": [
                {"commit": "a".repeat(40), "subject": "good", "mark": "good", "value": 1.0, "interval": [1.0, 1.0]},
                {"commit": "b".repeat(40), "subject": "bad", "mark": mark, "value": 0.99, "interval": [0.97, 1.01]}
            ],
            "outcome": "no_regression", "first_bad": []
        }))
        .unwrap()
    }

    #[test]
    fn an_undecided_end_says_not_significant_and_a_good_one_not_slower() {
        let undecided = render(&stopped("undecided"));
        assert!(undecided.contains("no regression found: BAD (bbbbbbbbbbbb)"), "{undecided}");
        assert!(undecided.contains("is not significant at level 0.0125"), "{undecided}");
        assert!(undecided.contains("larger --max-forks"), "{undecided}");
        let good = render(&stopped("good"));
        assert!(good.contains("is not slower than GOOD (aaaaaaaaaaaa) beyond 1%"), "{good}");
        assert!(!good.contains("significant"), "{good}");
    }
}
