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

#[cfg(test)]
mod tests {
    use super::si;

    #[test]
    fn four_significant_digits_with_suffix() {
        assert_eq!(si(3_412_345_678.0), "3.412 G");
        assert_eq!(si(30_179.0), "30.18 k");
        assert_eq!(si(999.4), "999.4");
        assert_eq!(si(0.5), "0.500");
        assert_eq!(si(f64::NAN), "n/a");
    }
}
