//! Number formatting for people (reports keep raw numbers).

/// Four significant digits with an SI suffix: `3.412 G`, `30.18 k`, `0.5000`.
pub fn si(x: f64) -> String {
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

/// Rows of cells as an aligned text table: the first row is the header, underlined; cells in
/// columns for which `right` is true are right-aligned.
pub fn table(rows: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> =
        (0..columns).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(
                |(c, cell)| {
                    if right(c) { format!("{cell:>w$}", w = widths[c]) } else { format!("{cell:<w$}", w = widths[c]) }
                },
            )
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
