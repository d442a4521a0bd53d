//! Thin entry point: parse, run, map errors to exit codes.

use clap::Parser;
use harness::{Cli, Exit, redact, remember_secrets};
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: harness::CountingAllocator = harness::CountingAllocator;

fn main() -> ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == harness::WORKER_ARG) {
        return harness::worker_main();
    }
    remember_secrets();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let line = one_line(&e.render().to_string()) + &from_environment(&e);
            eprintln!("{}", redact(&line));
            return Exit::BadInput.into();
        }
    };
    if !cli.measures() {
        // SAFETY: restoring a signal's default disposition before any thread is started.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match harness::run(cli) {
        Ok(code) => code,
        Err(e) => {
            let exit = harness::exit_of(&e);
            // Bad input is one line the user wrote; a failure shows its chain of causes.
            let text = if exit == Exit::BadInput { e.to_string() } else { format!("{e:#}") };
            eprintln!("error: {}", redact(&text));
            exit.into()
        }
    }
}

/// Clap's error on one line: its first line, the detail lines under it (the missing flags, the
/// possible values) and its tip; the usage block dropped.
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = lines.next().unwrap_or("error: invalid arguments").to_string();
    let mut tip = None;
    for line in lines.take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information")) {
        if line.starts_with("tip:") {
            tip = Some(line.to_string());
        } else {
            out.push(' ');
            out.push_str(line);
        }
    }
    match tip {
        Some(tip) => format!("{out} ({tip})"),
        None => format!("{out} (see --help)"),
    }
}

/// When the bad value came from an environment variable (not the command line), which one.
fn from_environment(e: &clap::Error) -> String {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return String::new() };
    let flag = arg.split_whitespace().next().unwrap_or_default().to_string();
    let given = std::env::args().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
    let command = Cli::command();
    let env = command
        .get_subcommands()
        .flat_map(|c| c.get_arguments())
        .find(|a| a.get_long().is_some_and(|l| format!("--{l}") == flag))
        .and_then(|a| a.get_env())
        .map(|v| v.to_string_lossy().into_owned());
    match env {
        Some(var) if !given && std::env::var_os(&var).is_some() => {
            format!("; the value came from the environment variable {var}: fix or unset it")
        }
        _ => String::new(),
    }
}
