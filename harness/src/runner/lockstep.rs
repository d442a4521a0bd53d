//! An A/B fork pair run side by side: both builds' workers start together and the parent
//! alternates their steps (calibration, each warmup and measured iteration, the closing check),
//! so iteration *i* of one build runs right beside iteration *i* of the other and the machine's
//! drift between seconds weighs on both alike. Only one worker runs at any moment.

use super::collect::Collector;
use super::{RunContext, Side, pair_order, spawn_failed, task};
use crate::plan::Case;
use crate::progress::Progress;
use crate::protocol::{Message, Task};
use crate::report::Fork;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// One worker of the pair: its collector, or the record of a worker that never started.
type Started<'a> = Result<Collector<'a>, Box<Fork>>;
/// What the progress display does with one worker's messages.
type OnMessage<'a> = Box<dyn FnMut(&Message) + 'a>;

/// Runs fork pair `pair` of `case` in lockstep; returns each side's fork, in the pair's order.
pub(super) fn run_pair(
    ctx: &RunContext<'_>,
    case: &Case,
    pair: u32,
    progress: &Progress,
    label: &str,
) -> Vec<(Side, Fork)> {
    let order = pair_order(pair);
    let task = Task { lockstep: true, ..task(case, pair, ctx, None) };
    // Each worker waits while the other measures: it takes about twice a lone fork's time.
    let timeout = Duration::from_nanos(ctx.settings.fork_timeout_nanos) * 2;
    let labels = order.map(|side| super::side_label(label, side));
    let mut workers: Vec<Started<'_>> = order
        .iter()
        .zip(&labels)
        .map(|(&side, shown)| {
            progress.fork_started(shown, pair, ctx.settings.forks);
            start(ctx, side, &task, timeout)
        })
        .collect();
    let mut on_message: Vec<OnMessage<'_>> =
        labels.iter().map(|l| Box::new(move |m: &Message| progress.message(l, m)) as OnMessage<'_>).collect();
    alternate_steps(&mut workers, &mut on_message, ctx.stop);
    let forks = workers.into_iter().zip(&mut on_message).map(|(w, on)| match w {
        Ok(c) => Fork { lockstep: true, layout: ctx.layouts.as_ref().map(|v| v.seed(pair)), ..c.finish(ctx.stop, on) },
        Err(fork) => *fork,
    });
    order
        .into_iter()
        .zip(forks)
        .zip(&labels)
        .map(|((side, fork), shown)| {
            super::report_fork_end(progress, shown, &fork, ctx.settings.forks);
            (side, fork)
        })
        .collect()
}

/// Starts one side's worker.
fn start<'a>(ctx: &RunContext<'_>, side: Side, task: &'a Task, timeout: Duration) -> Started<'a> {
    let (exe, _) = ctx.exe(side, Some(task.fork_index)).map_err(|e| Box::new(spawn_failed(task, e)))?;
    match ctx.start_worker(vec![], exe, task) {
        Ok(worker) => Ok(Collector::new(worker, task, timeout)),
        Err(e) => Err(Box::new(spawn_failed(task, e))),
    }
}

/// Waits until both workers are set up, then lets them take turns, one step each, the first to
/// go alternating from step to step (ABBA again), until neither waits for another step.
fn alternate_steps(workers: &mut [Started<'_>], on_message: &mut [OnMessage<'_>], stop: &AtomicBool) {
    let mut waiting: Vec<bool> = workers
        .iter_mut()
        .zip(on_message.iter_mut())
        .map(|(w, on)| w.as_mut().is_ok_and(|c| c.pump(stop, on.as_mut(), true)))
        .collect();
    for step in 0usize.. {
        let turn = if step.is_multiple_of(2) { [0, 1] } else { [1, 0] };
        let mut moved = false;
        for i in turn {
            if let (true, Ok(c)) = (waiting[i], &mut workers[i]) {
                waiting[i] = c.go() && c.pump(stop, on_message[i].as_mut(), true);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::PROTOCOL_VERSION;
    use crate::report::ForkStatus;

    /// A worker in shell: speaks the protocol, logs each step it is let take.
    const FAKE: &str = r#"
say() { echo "$1" >&3; }
say '{"type":"hello","protocol":P,"pid":1,"harness_version":"x"}'
read -r task
say '{"type":"verified","phase":"before"}'
for step in calibrate w0 m0 m1 finish; do
  say '{"type":"ready"}'
  [ "$(head -c 1)" = g ] || exit 9
  echo "$1 $step" >> "$2"
  case $step in
    calibrate) say '{"type":"calibrated","shape":"blocking","batch_size":1,"clock_read_nanos":1.0}' ;;
    w0) say '{"type":"iteration","kind":"warmup","index":0,"ops":1,"nanos":1}' ;;
    m0) say '{"type":"iteration","kind":"measure","index":0,"ops":1,"nanos":1}' ;;
    m1) say '{"type":"iteration","kind":"measure","index":1,"ops":1,"nanos":1}' ;;
    finish) say '{"type":"verified","phase":"after"}'; say '{"type":"done"}' ;;
  esac
done
"#;

    #[test]
    fn two_workers_take_turns_step_by_step_in_abba_order() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fake.sh");
        std::fs::write(&script, FAKE.replace('P', &PROTOCOL_VERSION.to_string())).unwrap();
        let log = dir.path().join("steps.log");
        let task = Task { lockstep: true, ..crate::runner::progress::tests::task() };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut workers: Vec<Started<'_>> = ["A", "B"]
            .map(|name| {
                let command = ["sh".into(), script.clone().into_os_string(), name.into(), log.clone().into_os_string()];
                Ok(Collector::new(
                    super::super::spawn::spawn(&command, &task, None).unwrap(),
                    &task,
                    Duration::from_secs(20),
                ))
            })
            .into_iter()
            .collect();
        let mut on: Vec<OnMessage<'_>> = vec![Box::new(|_| {}), Box::new(|_| {})];
        alternate_steps(&mut workers, &mut on, &stop);
        let steps = std::fs::read_to_string(&log).unwrap();
        let order: Vec<&str> = steps.lines().collect();
        assert_eq!(
            order,
            ["A calibrate", "B calibrate", "B w0", "A w0", "A m0", "B m0", "B m1", "A m1", "A finish", "B finish"]
        );
        for (w, on) in workers.into_iter().zip(&mut on) {
            let fork = w.unwrap().finish(&stop, on.as_mut());
            assert_eq!(fork.status, ForkStatus::Ok, "{:?}", fork.failure);
            assert_eq!(fork.iterations.len(), 2);
        }
    }
}
