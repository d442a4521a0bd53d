//! SVG charts drawn with plotters: horizontal bars with error whiskers per workload group (log
//! scale when the scores span more than two decades), and throughput against table size as
//! lines. Output depends only on the data, so regenerating gives byte-identical files.

use crate::format::si;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

/// One bar: label, score, and the half-width of its error when known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bar {
    /// Case label.
    pub label: String,
    /// Mean ops/s.
    pub value: f64,
    /// Half-width of the confidence interval.
    pub error: Option<f64>,
}

/// One line of a line chart: its name and (x, y) points, sorted by x.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    /// Legend entry.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

const CHAR_WIDTH: u32 = 7;

/// The x axis of [`bars`]: (log scale?, lowest value shown, axis start, axis end); log10 when
/// the values span more than two decades.
fn bar_scale(bars: &[Bar]) -> (bool, f64, f64, f64) {
    let lows = bars.iter().map(|b| (b.value - b.error.unwrap_or(0.0)).max(b.value / 2.0));
    let low = lows.fold(f64::INFINITY, f64::min);
    let high = bars.iter().map(|b| b.value + b.error.unwrap_or(0.0)).fold(0.0, f64::max);
    let log = low > 0.0 && high / low > 100.0;
    let (x0, x1) = if log { ((low / 2.0).log10().floor(), high.log10().ceil()) } else { (0.0, high * 1.1) };
    (log, low, x0, x1)
}

/// Horizontal bars of ops/s with error whiskers, first bar on top.
pub(crate) fn bars(title: &str, bars: &[Bar]) -> anyhow::Result<String> {
    let n = bars.len().max(1);
    let label_width = bars.iter().map(|b| b.label.chars().count() as u32).max().unwrap_or(8) * CHAR_WIDTH + 16;
    let size = (label_width + 620, 120 + 26 * n as u32);
    let (log, low, x0, x1) = bar_scale(bars);
    // On a log scale the bars are drawn in log10 space and the ticks labelled back in ops/s.
    let map = |v: f64| if log { v.max(low / 2.0).log10() } else { v };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .margin_right(48)
            .x_label_area_size(40)
            .y_label_area_size(label_width)
            // Rows 0..n; plotters adds one empty segment on top.
            .build_cartesian_2d(x0..x1.max(x0 + 1e-9), (0..n).into_segmented())?;
        let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
        let y_label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) if *i < labels.len() => labels[labels.len() - 1 - *i].clone(),
            _ => String::new(),
        };
        let x_label = |x: &f64| if log { si(10f64.powf(*x)) } else { si(*x) };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .y_labels(n)
            .x_labels(if log { (x1 - x0) as usize + 1 } else { 10 })
            .y_label_formatter(&y_label)
            .x_label_formatter(&x_label)
            .x_desc(if log { "ops/s (log scale)" } else { "ops/s" })
            .draw()?;
        let row = |i: usize| n - 1 - i;
        chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
            let y = row(i);
            let mut bar = Rectangle::new(
                [(x0, SegmentValue::Exact(y)), (map(b.value), SegmentValue::Exact(y + 1))],
                BLUE.mix(0.5).filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))?;
        chart.draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            let e = b.error?;
            Some(ErrorBar::new_horizontal(
                SegmentValue::CenterOf(row(i)),
                map(b.value - e),
                map(b.value),
                map(b.value + e),
                BLACK.stroke_width(1),
                8,
            ))
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// Lines of `y` against `x`, one per series, with a legend.
pub(crate) fn lines(title: &str, x_desc: &str, y_desc: &str, lines: &[Line]) -> anyhow::Result<String> {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x_max = xs.fold(0.0, f64::max);
    let y_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 520)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..(x_max * 1.05).max(1.0), 0.0..(y_max * 1.1).max(1.0))?;
        let fmt = |v: &f64| si(*v);
        chart
            .configure_mesh()
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .draw()?;
        for (i, line) in lines.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))?
                .label(line.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.9)).border_style(BLACK).draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Growth curves in two panels over table rows (log scale): rows inserted per second, each
/// kind a median line with a band from its slowest to its fastest fork; and WAL bytes per row.
pub(crate) fn growth(title: &str, curves: &[crate::report::growth::Curve]) -> anyhow::Result<String> {
    let points = || curves.iter().flat_map(|c| c.points.iter());
    let x0 = points().map(|p| p.rows).fold(f64::INFINITY, f64::min).max(1.0);
    let x1 = points().map(|p| p.rows).fold(0.0, f64::max).max(x0 * 10.0);
    let rate_max = points().map(|p| p.rate.2).fold(0.0, f64::max).max(1.0) * 1.1;
    let wal = || points().filter_map(|p| p.wal_per_row).filter(|w| *w > 0.0);
    let wal_range = (wal().fold(f64::INFINITY, f64::min).min(1e9) * 0.9, wal().fold(0.0, f64::max).max(1.0) * 1.1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 760)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 18))?;
        let (upper, lower) = root.split_vertically(430);
        let fmt = |v: &f64| si(*v);
        let mut top = ChartBuilder::on(&upper)
            .margin(12)
            .margin_right(40)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale(), 0.0..rate_max)?;
        top.configure_mesh()
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .x_desc("rows in the table (log scale)")
            .y_desc("rows inserted per second")
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .draw()?;
        for (i, c) in curves.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let mut band: Vec<(f64, f64)> = c.points.iter().map(|p| (p.rows, p.rate.2)).collect();
            band.extend(c.points.iter().rev().map(|p| (p.rows, p.rate.1)));
            top.draw_series(std::iter::once(Polygon::new(band, color.mix(0.2).filled())))?;
            top.draw_series(LineSeries::new(c.points.iter().map(|p| (p.rows, p.rate.0)), color.stroke_width(2)))?
                .label(c.kind.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            top.draw_series(c.points.iter().map(|p| Circle::new((p.rows, p.rate.0), 2, color.filled())))?;
            if let Some((rows, _)) = c.outgrew {
                let mark = [(rows, 0.0), (rows, rate_max)];
                top.draw_series(DashedLineSeries::new(mark, 6, 4, color.stroke_width(1)))?;
            }
        }
        top.configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        wal_panel(&lower, (x0, x1), wal_range, curves)?;
        root.present()?;
    }
    Ok(svg)
}

/// The lower panel of [`growth`]: WAL bytes per row against table rows, one line per kind, on
/// a log scale (kinds differ by up to a hundredfold).
fn wal_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    curves: &[crate::report::growth::Curve],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let fmt = |v: &f64| si(*v);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(40)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0.min(y1 / 10.0)..y1).log_scale())?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .x_desc("rows in the table (log scale)")
        .y_desc("WAL bytes per row inserted (log scale)")
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .draw()?;
    for (i, c) in curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let wal = c.points.iter().filter_map(|p| Some((p.rows, p.wal_per_row?)));
        chart.draw_series(LineSeries::new(wal, color.stroke_width(2)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: f64, error: Option<f64>) -> Bar {
        Bar { label: label.into(), value, error }
    }

    #[test]
    fn bars_are_deterministic_svg_with_labels_and_whiskers() {
        let data = [bar("a[x=1]", 1000.0, Some(50.0)), bar("b", 2000.0, None)];
        let svg = bars("group", &data).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("a[x=1]") && svg.contains("ops/s"), "{svg}");
        assert_eq!(svg, bars("group", &data).unwrap());
        assert!(!svg.contains("log scale"));
    }

    #[test]
    fn a_wide_spread_uses_a_log_scale() {
        let svg = bars("group", &[bar("fast", 3e9, None), bar("slow", 3e3, Some(10.0))]).unwrap();
        assert!(svg.contains("ops/s (log scale)"), "{svg}");
    }

    #[test]
    fn lines_have_a_legend() {
        let l = [Line { name: "uuid_v4".into(), points: vec![(100.0, 5.0), (200.0, 4.0)] }];
        let svg = lines("growth", "rows", "ops/s", &l).unwrap();
        assert!(svg.contains("uuid_v4") && svg.contains("rows"), "{svg}");
    }
}
