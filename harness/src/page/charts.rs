//! SVG charts drawn with plotters: horizontal bars with error whiskers per workload group (log
//! scale when the scores span more than two decades), and throughput against table size as
//! lines. Output depends only on the data, so regenerating gives byte-identical files.

use crate::format::si;
use plotters::coord::ranged1d::{Ranged, SegmentValue, ValueFormatter};
use plotters::prelude::*;

/// The tick labels' font of every chart.
pub(super) const TICK_FONT: (&str, u32) = ("sans-serif", 12);
/// The axis descriptions' font of every chart.
const AXIS_FONT: (&str, u32) = ("sans-serif", 13);

/// The mesh of a chart of numbers on both axes, set up once for every such chart: the fonts,
/// the axis descriptions and SI tick labels (`12.3k`), on a linear or a log scale.
fn number_mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    (x_desc, y_desc): (&str, &str),
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let fmt = |v: &f64| si(*v);
    chart
        .configure_mesh()
        .label_style(TICK_FONT)
        .axis_desc_style(AXIS_FONT)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .draw()?;
    Ok(())
}

/// An SVG drawing of `size` on white: `draw` paints the area, and the text is returned.
pub(super) fn svg<F>(size: (u32, u32), draw: F) -> anyhow::Result<String>
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> anyhow::Result<()>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(svg)
}

/// The frame of every line chart, set up once: its title on top, the margins and the room
/// for the tick labels (`margin_right` leaves room for the last x label).
fn line_frame<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &'b str,
    margin_right: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .margin_right(margin_right)
        .x_label_area_size(40)
        .y_label_area_size(70);
    builder
}

/// Draws each line with a dot per point and its legend entry, in the colour `colour` picks.
fn draw_lines<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    lines: &[Line],
    colour: impl Fn(usize) -> RGBAColor,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, line) in lines.iter().enumerate() {
        let color = colour(i);
        chart
            .draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))?
            .label(line.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    Ok(())
}

/// One bar: label, score, the half-width of its error when known, and its series (colour).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bar {
    /// Short case label.
    pub label: String,
    /// Mean ops/s.
    pub value: f64,
    /// Half-width of the confidence interval.
    pub error: Option<f64>,
    /// Index into [`BarChart::series`] (0 when the chart has one colour).
    pub series: usize,
}

/// A bar chart: its title, bars (first on top), what the colours stand for and the name of
/// each (none: one colour), and lines of notes under the axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BarChart {
    /// Title.
    pub title: String,
    /// Bars, first on top.
    pub bars: Vec<Bar>,
    /// What the colours tell apart (`db`), when they do.
    pub series_key: Option<String>,
    /// Legend entry per colour; empty when every bar has one colour.
    pub series: Vec<String>,
    /// Notes under the axis (the params every case shares).
    pub notes: Vec<String>,
}

/// Colours of the series, told apart in print and by most colour-blind readers (Tableau 10).
const SERIES_COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The colour of series `i`.
fn series_colour(i: usize) -> RGBColor {
    SERIES_COLOURS[i % SERIES_COLOURS.len()]
}

/// Height of one line of notes under a bar chart.
const NOTE_HEIGHT: u32 = 18;

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

/// Horizontal bars of ops/s with error whiskers, first bar on top, one colour per series with
/// a legend, and the chart's notes under the axis.
pub(crate) fn bars(chart: &BarChart) -> anyhow::Result<String> {
    let n = chart.bars.len().max(1) as u32;
    let label_width = chart.bars.iter().map(|b| b.label.chars().count() as u32).max().unwrap_or(8) * CHAR_WIDTH + 16;
    let legend = u32::from(chart.series_key.is_some());
    let notes = NOTE_HEIGHT * (chart.notes.len() as u32 + legend);
    let size = (label_width + 620, 120 + 26 * n + notes);
    svg(size, |root| {
        let (upper, lower) = root.split_vertically(size.1 - notes);
        bar_area(&upper, chart, label_width)?;
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        let mut x = label_width as i32;
        if let Some(key) = &chart.series_key {
            lower.draw(&Text::new(format!("{key}:"), (x, 0), font.clone()))?;
            x += CHAR_WIDTH as i32 * (key.chars().count() as i32 + 2);
            for (i, name) in chart.series.iter().enumerate() {
                lower.draw(&Rectangle::new([(x, 1), (x + 12, 13)], series_colour(i).mix(0.75).filled()))?;
                lower.draw(&Text::new(name.clone(), (x + 17, 0), font.clone()))?;
                x += 17 + CHAR_WIDTH as i32 * (name.chars().count() as i32 + 3);
            }
        }
        for (i, note) in chart.notes.iter().enumerate() {
            let at = (label_width as i32, ((i as u32 + legend) * NOTE_HEIGHT) as i32);
            lower.draw(&Text::new(note.clone(), at, font.clone()))?;
        }
        Ok(())
    })
}

/// The axes, bars, whiskers and legend of [`bars`] on `area`.
fn bar_area<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &BarChart,
    label_width: u32,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let (bars, n) = (&chart.bars, chart.bars.len().max(1));
    let (log, low, x0, x1) = bar_scale(bars);
    // On a log scale the bars are drawn in log10 space and the ticks labelled back in ops/s.
    let map = |v: f64| if log { v.max(low / 2.0).log10() } else { v };
    let mut plot = ChartBuilder::on(area)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(12)
        .margin_right(48)
        .x_label_area_size(40)
        .y_label_area_size(label_width)
        // Rows 0..n; plotters adds one empty segment on top.
        .build_cartesian_2d(x0..x1.max(x0 + 1e-9), (0..n).into_segmented())?;
    let y_label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) if *i < bars.len() => bars[bars.len() - 1 - *i].label.clone(),
        _ => String::new(),
    };
    let x_label = |x: &f64| if log { si(10f64.powf(*x)) } else { si(*x) };
    plot.configure_mesh()
        .disable_y_mesh()
        .label_style(TICK_FONT)
        .axis_desc_style(AXIS_FONT)
        .y_labels(n)
        .x_labels(if log { (x1 - x0) as usize + 1 } else { 10 })
        .y_label_formatter(&y_label)
        .x_label_formatter(&x_label)
        .x_desc(if log { "ops/s (log scale)" } else { "ops/s" })
        .draw()?;
    let row = |i: usize| n - 1 - i;
    for s in 0..chart.series.len().max(1) {
        let colour = series_colour(s);
        let in_series = bars.iter().enumerate().filter(|(_, b)| b.series == s);
        plot.draw_series(in_series.map(|(i, b)| {
            let mut bar = Rectangle::new(
                [(x0, SegmentValue::Exact(row(i))), (map(b.value), SegmentValue::Exact(row(i) + 1))],
                colour.mix(0.75).filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))?;
    }
    plot.draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
        let e = b.error?;
        let (lo, hi) = (map(b.value - e), map(b.value + e));
        Some(ErrorBar::new_horizontal(SegmentValue::CenterOf(row(i)), lo, map(b.value), hi, BLACK.stroke_width(1), 8))
    }))?;
    Ok(())
}

/// Lines of `y` against `x`, one per series, with a legend.
pub(crate) fn lines(title: &str, x_desc: &str, y_desc: &str, lines: &[Line]) -> anyhow::Result<String> {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x_max = xs.fold(0.0, f64::max);
    let y_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    svg((900, 520), |root| {
        let mut chart = line_frame(root, title, 12)
            .build_cartesian_2d(0.0..(x_max * 1.05).max(1.0), 0.0..(y_max * 1.1).max(1.0))?;
        number_mesh(&mut chart, (x_desc, y_desc))?;
        draw_lines(&mut chart, lines, |i| Palette99::pick(i).to_rgba())?;
        chart.configure_series_labels().background_style(WHITE.mix(0.9)).border_style(BLACK).draw()?;
        Ok(())
    })
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
    svg((900, 760), |root| {
        let root = root.titled(title, ("sans-serif", 18))?;
        let (upper, lower) = root.split_vertically(430);
        let mut top = ChartBuilder::on(&upper)
            .margin(12)
            .margin_right(40)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale(), 0.0..rate_max)?;
        number_mesh(&mut top, ("rows in the table (log scale)", "rows inserted per second"))?;
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
        Ok(())
    })
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
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(40)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0.min(y1 / 10.0)..y1).log_scale())?;
    number_mesh(&mut chart, ("rows in the table (log scale)", "WAL bytes per row inserted (log scale)"))?;
    for (i, c) in curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let wal = c.points.iter().filter_map(|p| Some((p.rows, p.wal_per_row?)));
        chart.draw_series(LineSeries::new(wal, color.stroke_width(2)))?;
    }
    Ok(())
}

/// One case's latency–throughput curve: p50, p99 and p99.9 of the corrected latency (µs, log
/// scale, so the knee shows) against the achieved ops/s, and the case's closed-loop ops/s as a
/// dashed line where it was measured.
pub(crate) fn latency_curve(title: &str, closed: Option<f64>, lines: &[Line]) -> anyhow::Result<String> {
    let points = || lines.iter().flat_map(|l| l.points.iter());
    let x1 = points().map(|p| p.0).chain(closed).fold(0.0, f64::max).max(1.0) * 1.08;
    let y0 = points().map(|p| p.1).fold(f64::INFINITY, f64::min).clamp(0.01, 1e9) / 1.5;
    let y1 = points().map(|p| p.1).fold(0.0, f64::max).max(y0 * 10.0) * 1.5;
    svg((900, 520), |root| {
        let mut chart = line_frame(root, title, 40).build_cartesian_2d(0.0..x1, (y0..y1).log_scale())?;
        number_mesh(&mut chart, ("achieved ops/s (open loop)", "latency from the intended start, µs (log scale)"))?;
        draw_lines(&mut chart, lines, |i| series_colour(i).to_rgba())?;
        if let Some(c) = closed {
            chart
                .draw_series(DashedLineSeries::new([(c, y0), (c, y1)], 6, 4, BLACK.stroke_width(1)))?
                .label(format!("closed loop: {} ops/s", si(c)))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(1)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: f64, error: Option<f64>, series: usize) -> Bar {
        Bar { label: label.into(), value, error, series }
    }

    fn chart(bars: Vec<Bar>, series: &[&str], notes: &[&str]) -> BarChart {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        let series_key = (!series.is_empty()).then(|| "db".to_string());
        BarChart { title: "group".into(), bars, series_key, series: strings(series), notes: strings(notes) }
    }

    #[test]
    fn bars_are_deterministic_svg_with_labels_and_whiskers() {
        let data = chart(vec![bar("a x=1", 1000.0, Some(50.0), 0), bar("b", 2000.0, None, 0)], &[], &[]);
        let svg = bars(&data).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("a x=1") && svg.contains("ops/s"), "{svg}");
        assert_eq!(svg, bars(&data).unwrap());
        assert!(!svg.contains("log scale"));
    }

    #[test]
    fn series_get_colours_a_legend_and_notes_under_the_axis() {
        let data = chart(
            vec![bar("a", 1000.0, None, 0), bar("a", 900.0, None, 1)],
            &["sqlite", "postgres"],
            &["every case: pool=10"],
        );
        let svg = bars(&data).unwrap();
        assert!(svg.contains("db:") && svg.contains("sqlite") && svg.contains("postgres"), "{svg}");
        assert!(svg.contains("every case: pool=10"), "{svg}");
        let (blue, orange) = ("#1F77B4", "#FF7F0E");
        assert!(svg.to_uppercase().contains(blue) && svg.to_uppercase().contains(orange), "{svg}");
    }

    #[test]
    fn a_wide_spread_uses_a_log_scale() {
        let svg = bars(&chart(vec![bar("fast", 3e9, None, 0), bar("slow", 3e3, Some(10.0), 0)], &[], &[])).unwrap();
        assert!(svg.contains("ops/s (log scale)"), "{svg}");
    }

    #[test]
    fn lines_have_a_legend() {
        let l = [Line { name: "uuid_v4".into(), points: vec![(100.0, 5.0), (200.0, 4.0)] }];
        let svg = lines("growth", "rows", "ops/s", &l).unwrap();
        assert!(svg.contains("uuid_v4") && svg.contains("rows"), "{svg}");
    }
}
