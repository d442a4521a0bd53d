//! Thin entry point: parse, run, map errors to exit codes.

use clap::Parser;
use harness::{BadInput, EXIT_BAD_INPUT, EXIT_FAILED, cli::Cli, redact::redact};
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: harness::alloc::CountingAllocator = harness::alloc::CountingAllocator;

fn main() -> ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == "__worker") {
        return harness::worker::main();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", redact(&one_line(&e.render().to_string())));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    match harness::app::run(cli) {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<BadInput>().is_some() => {
            eprintln!("error: {}", redact(&e.to_string()));
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(e) => {
            eprintln!("error: {}", redact(&format!("{e:#}")));
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Clap's error line, plus its tip when it has one; usage blocks dropped.
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("error: invalid arguments").to_string();
    match lines.find(|l| l.starts_with("tip:")) {
        Some(tip) => format!("{first} ({tip})"),
        None => format!("{first} (see --help)"),
    }
}
