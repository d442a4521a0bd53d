//! Number formatting for people (reports keep raw numbers).

/// Nanoseconds for people: `812 ns`, `13.41 µs`, `1.002 ms`.
pub(crate) fn nanos(n: f64) -> String {
    match n {
        n if n >= 1e6 => format!("{} ms", si(n / 1e6)),
        n if n >= 1e3 => format!("{} µs", si(n / 1e3)),
        n => format!("{} ns", si(n)),
    }
}

/// A setting's duration as a flag takes it: `100ms`, `1s 500ms`.
pub(crate) fn duration(nanos: u64) -> String {
    humantime::format_duration(std::time::Duration::from_nanos(nanos)).to_string()
}

/// A duration in whole seconds for people, at least one: `1m 32s`, `1s`.
pub(crate) fn whole_seconds(secs: f64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(secs.round().max(1.0) as u64)).to_string()
}

/// Four significant digits with an SI suffix: `3.412 G`, `30.18 k`, `0.5000`.
pub(crate) fn si(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let (scaled, suffix) = match x.abs() {
        a if a >= 1e12 => (x / 1e12, " T"),
        a if a >= 1e9 => (x / 1e9, " G"),
        a if a >= 1e6 => (x / 1e6, " M"),
        a if a >= 1e3 => (x / 1e3, " k"),
        _ => (x, ""),
    };
    let digits = match scaled.abs() {
        a if a >= 100.0 => 1,
        a if a >= 10.0 => 2,
        _ => 3,
    };
    format!("{scaled:.digits$}{suffix}")
}

/// What a coloured word says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    /// A regression or a loss (red).
    Bad,
    /// An improvement (green).
    Good,
    /// Undecided or not comparable (yellow).
    Doubt,
    /// No colour.
    Plain,
}

static COLOUR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns colour on or off for this process (decided by `--color` at the command line's edge).
pub(crate) fn set_colour(on: bool) {
    COLOUR.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// `text` in the colour of `tone` when colour is on.
pub(crate) fn paint(text: String, tone: Tone) -> String {
    let code = match tone {
        Tone::Bad => "1;31",
        Tone::Good => "1;32",
        Tone::Doubt => "33",
        Tone::Plain => return text,
    };
    if COLOUR.load(std::sync::atomic::Ordering::Relaxed) { format!("\x1b[{code}m{text}\x1b[0m") } else { text }
}

/// Characters a terminal shows (ANSI colour sequences take no room).
fn visible_width(s: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for ch in s.chars() {
        match (in_escape, ch) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// Rows of cells as an aligned text table: the first row is the header, underlined; cells in
/// columns for which `right` is true are right-aligned. Coloured cells align by what shows.
pub(crate) fn table(rows: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> =
        (0..columns).map(|c| rows.iter().map(|r| visible_width(&r[c])).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                let pad = " ".repeat(widths[c] - visible_width(cell));
                if right(c) { format!("{pad}{cell}") } else { format!("{cell}{pad}") }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{si, table};

    #[test]
    fn coloured_cells_align_by_what_shows() {
        let rows =
            vec![vec!["v".to_string(), "n".to_string()], vec!["\x1b[1;31mSLOWER\x1b[0m".to_string(), "1".into()]];
        assert_eq!(table(&rows, |c| c == 1), "v       n\n------  -\n\x1b[1;31mSLOWER\x1b[0m  1\n");
    }

    #[test]
    fn tables_align_and_underline_the_header() {
        let rows = vec![vec!["name".to_string(), "n".to_string()], vec!["ab".to_string(), "1000".to_string()]];
        assert_eq!(table(&rows, |c| c == 1), "name     n\n----  ----\nab    1000\n");
    }

    #[test]
    fn four_significant_digits_with_suffix() {
        assert_eq!(si(3_412_345_678.0), "3.412 G");
        assert_eq!(si(30_179.0), "30.18 k");
        assert_eq!(si(999.4), "999.4");
        assert_eq!(si(0.5), "0.500");
        assert_eq!(si(f64::NAN), "n/a");
    }
}
