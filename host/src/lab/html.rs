//! The comparison as one HTML file: tables of the figures and charts drawn
//! by plotters as inline SVG (nothing fetched: it opens offline).

use super::Comparison;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::fmt::Write;
use tephra_sim::lab::{seconds, Summary, Waits};

/// Each variant's colour, in order (the browser test looks for the first two).
pub const COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x17, 0xbe, 0xcf),
];

const SIZE: (u32, u32) = (880, 300);

/// (time, value) points of one line.
type Points = Vec<(f64, f64)>;

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing the report: {e}")
}

/// Lines over time, one per variant: `series(v)` gives its points.
fn time_chart(
    c: &Comparison,
    title: &str,
    y_desc: &str,
    y_max: f64,
    series: impl Fn(&Summary) -> Option<Points>,
) -> Result<Option<String>> {
    let lines: Vec<(usize, &Summary, Points)> =
        c.variants.iter().enumerate().filter_map(|(i, v)| Some((i, v, series(v)?))).collect();
    if lines.iter().all(|(_, _, pts)| pts.is_empty()) {
        return Ok(None);
    }
    let t_max = lines.iter().flat_map(|l| l.2.iter().map(|p| p.0)).fold(1.0, f64::max);
    let y_top = lines.iter().flat_map(|l| l.2.iter().map(|p| p.1)).fold(y_max, f64::max) * 1.05;
    let (unit, scale) = time_unit(t_max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..t_max / scale, 0.0..y_top)
            .map_err(err)?;
        chart.configure_mesh().x_desc(format!("simulated time ({unit})")).y_desc(y_desc).draw().map_err(err)?;
        for (i, v, pts) in &lines {
            let style = ShapeStyle { color: colour(*i).to_rgba(), filled: false, stroke_width: 3 };
            // A step line: each value holds until the next sample.
            let mut steps = Vec::with_capacity(pts.len() * 2);
            for w in pts.windows(2) {
                steps.push((w[0].0 / scale, w[0].1));
                steps.push((w[1].0 / scale, w[0].1));
            }
            if let Some(last) = pts.last() {
                steps.push((last.0 / scale, last.1));
            }
            chart
                .draw_series(LineSeries::new(steps, style))
                .map_err(err)?
                .label(v.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        chart.configure_series_labels().background_style(WHITE).border_style(BLACK).draw().map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

fn time_unit(t_max: f64) -> (&'static str, f64) {
    match t_max {
        t if t > 4.0 * 86400.0 => ("days", 86400.0),
        t if t > 4.0 * 3600.0 => ("hours", 3600.0),
        t if t > 240.0 => ("minutes", 60.0),
        _ => ("seconds", 1.0),
    }
}

/// Bars of a wait figure per queue, a bar per variant in each group.
fn wait_bars(c: &Comparison, label: &str, pick: impl Fn(&Waits) -> f64) -> Result<Option<String>> {
    let mut queues: Vec<&String> = c.variants.iter().flat_map(|v| v.queues.keys()).collect();
    queues.sort();
    queues.dedup();
    if queues.is_empty() {
        return Ok(None);
    }
    let n = c.variants.len().max(1) as f64;
    let top = c.variants.iter().flat_map(|v| v.queues.values().map(&pick)).fold(1.0, f64::max) * 1.1;
    let (unit, scale) = time_unit(top);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let names = queues.clone();
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{label} wait per queue"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..queues.len() as f64, 0.0..top / scale)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(queues.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    names.get(i).map(|s| s.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(format!("wait ({unit})"))
            .draw()
            .map_err(err)?;
        for (vi, v) in c.variants.iter().enumerate() {
            let fill = colour(vi).filled();
            let bars = queues.iter().enumerate().filter_map(|(qi, q)| {
                let w = pick(v.queues.get(*q)?) / scale;
                let x0 = qi as f64 + 0.1 + 0.8 * vi as f64 / n;
                Some(Rectangle::new([(x0, 0.0), (x0 + 0.8 / n, w)], fill))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(v.name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], fill));
        }
        chart.configure_series_labels().background_style(WHITE).border_style(BLACK).draw().map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Table cells of the wait figures and evictions.
fn wait_cells(w: &Waits) -> String {
    let mut s: String = w.cells().iter().map(|c| format!("<td>{c}</td>")).collect();
    let _ = write!(s, "<td>{}</td>", esc(&w.evictions_text()));
    s
}

/// Each job's observed start against its simulated one (the diagonal is a
/// perfect forecast), as a scatter chart.
fn fidelity_chart(f: &super::fidelity::Fidelity) -> Result<Option<String>> {
    let points: Vec<(f64, f64)> = f.rows.iter().filter_map(|r| Some((r.simulated.start?, r.observed.start?))).collect();
    if points.is_empty() {
        return Ok(None);
    }
    let top = points.iter().map(|p| p.0.max(p.1)).fold(1.0, f64::max) * 1.05;
    let (unit, scale) = time_unit(top);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("each job's start: observed against predicted", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..top / scale, 0.0..top / scale)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(format!("predicted by the simulator ({unit})"))
            .y_desc(format!("observed on the cluster ({unit})"))
            .draw()
            .map_err(err)?;
        let grey = ShapeStyle { color: RGBColor(0x99, 0x99, 0x99).to_rgba(), filled: false, stroke_width: 1 };
        chart.draw_series(LineSeries::new(vec![(0.0, 0.0), (top / scale, top / scale)], grey)).map_err(err)?;
        let style = ShapeStyle { color: colour(1).to_rgba(), filled: true, stroke_width: 1 };
        chart.draw_series(points.iter().map(|&(x, y)| Circle::new((x / scale, y / scale), 3, style))).map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(Some(svg))
}

/// The per-job rows of the "predicted vs observed" table.
fn fidelity_rows(f: &super::fidelity::Fidelity) -> String {
    let mut h = String::new();
    for r in &f.rows {
        h += "<tr>";
        for cell in r.cells() {
            let _ = write!(h, "<td>{}</td>", esc(&cell));
        }
        h += "</tr>\n";
    }
    h
}

/// The "predicted vs observed" section.
fn fidelity_section(f: &super::fidelity::Fidelity) -> Result<String> {
    let mut h = String::from("<h2>Predicted vs observed</h2>\n");
    let p = f.period;
    let _ = writeln!(
        h,
        "<p>The simulator's forecast against the same workload replayed on a cluster (<code>tephra fidelity</code>), \
         period {p} s: |Δ start| median {:.1} s ({:.2} periods), p95 {:.1} s ({:.2} periods); makespan {} predicted, \
         {} observed ({:+.2} %); goals {}.</p>",
        f.start_median,
        f.start_median / p,
        f.start_p95,
        f.start_p95 / p,
        seconds(f.makespan.0),
        seconds(f.makespan.1),
        100.0 * (f.makespan.1 - f.makespan.0) / f.makespan.0.max(1e-9),
        if f.goals_met() { "met" } else { "not met" }
    );
    h += "<table id=\"fidelity-overall\"><tr><th>figure</th><th>predicted</th><th>observed</th></tr>\n";
    for (k, (a, b)) in &f.utilisation {
        let _ =
            writeln!(h, "<tr><td>{} in use</td><td>{:.1} %</td><td>{:.1} %</td></tr>", esc(k), 100.0 * a, 100.0 * b);
    }
    for (q, (a, b)) in &f.shares {
        let _ = writeln!(
            h,
            "<tr><td>queue {} mean share</td><td>{:.1} %</td><td>{:.1} %</td></tr>",
            esc(q),
            100.0 * a,
            100.0 * b
        );
    }
    h += "</table>\n";
    if let Some(svg) = fidelity_chart(f)? {
        let _ = writeln!(h, "<figure class=\"chart\">{svg}</figure>");
    }
    h += "<table id=\"fidelity-jobs\"><tr><th>job</th><th>predicted start</th><th>observed start</th><th>Δ</th>\
          <th>predicted end</th><th>observed end</th><th>Δ</th><th>nodes</th></tr>\n";
    h += &fidelity_rows(f);
    h += "</table>\n";
    Ok(h)
}

/// The whole page.
pub fn render(c: &Comparison) -> Result<String> {
    let mut h = String::new();
    let names = c.variants.iter().map(|v| esc(&v.name)).collect::<Vec<_>>().join(" vs ");
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tephra lab: {names}</title>\n\
         <style>body{{font-family:sans-serif;margin:24px;max-width:940px}}table{{border-collapse:collapse;margin:8px 0 20px}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}th:first-child,td:first-child{{text-align:left}}\
         .swatch{{display:inline-block;width:12px;height:12px;margin-right:6px}}figure{{margin:0 0 16px}}</style>\n\
         </head><body>\n<h1>tephra lab: {names}</h1>\n<p>Workload: {}</p>\n",
        esc(&c.workload.join(", "))
    );
    h += "<h2>Overall</h2>\n<table id=\"overall\"><tr><th>variant</th><th>jobs</th><th>still waiting</th>\
          <th>wait p50</th><th>p90</th><th>p99</th><th>max</th><th>evictions</th><th>makespan</th><th>mean use</th></tr>\n";
    for (i, v) in c.variants.iter().enumerate() {
        let w = &v.overall;
        let RGBColor(r, g, b) = colour(i);
        let _ = writeln!(
            h,
            "<tr><td><span class=\"swatch\" style=\"background:#{r:02x}{g:02x}{b:02x}\"></span>{}</td>{}\
             <td>{}</td><td>{}</td></tr>",
            esc(&v.name),
            wait_cells(w),
            seconds(v.makespan),
            v.usage_text()
        );
    }
    h += "</table>\n";
    let mut charts = Vec::new();
    let mut resources: Vec<&String> = c.variants.iter().flat_map(|v| v.utilisation.keys()).collect();
    resources.sort();
    resources.dedup();
    for res in resources {
        let title = format!("{res} in use");
        charts.push(time_chart(c, &title, "% of the cluster", 100.0, |v| {
            Some(v.utilisation.get(res)?.iter().map(|&(t, x)| (t, x * 100.0)).collect())
        })?);
    }
    let mut queues: Vec<&String> = c.variants.iter().flat_map(|v| v.share.keys()).collect();
    queues.sort();
    queues.dedup();
    for q in queues {
        let title = format!("queue {q}: allocated / deserved");
        charts.push(time_chart(c, &title, "share of deserved", 1.0, |v| v.share.get(q).cloned())?);
    }
    charts.push(wait_bars(c, "p90", |w| w.p90)?);
    charts.push(wait_bars(c, "longest", |w| w.max)?);
    h += "<h2>Charts</h2>\n";
    for svg in charts.into_iter().flatten() {
        let _ = writeln!(h, "<figure class=\"chart\">{svg}</figure>");
    }
    h += "<h2>Per queue</h2>\n<table id=\"queues\"><tr><th>queue</th><th>variant</th><th>jobs</th><th>still waiting</th>\
          <th>wait p50</th><th>p90</th><th>p99</th><th>max</th><th>evictions</th></tr>\n";
    let mut queues: Vec<&String> = c.variants.iter().flat_map(|v| v.queues.keys()).collect();
    queues.sort();
    queues.dedup();
    for q in queues {
        for v in &c.variants {
            let Some(w) = v.queues.get(q) else { continue };
            let _ = writeln!(h, "<tr><td>{}</td><td>{}</td>{}</tr>", esc(q), esc(&v.name), wait_cells(w));
        }
    }
    h += "</table>\n<h2>Longest-starved job</h2>\n<ul>\n";
    for v in &c.variants {
        let _ = match &v.longest_starved {
            Some(j) => writeln!(
                h,
                "<li>{}: {} (queue {}) {} {}</li>",
                esc(&v.name),
                esc(&j.job),
                esc(&j.queue),
                if j.still_waiting { "still waiting after" } else { "waited" },
                seconds(j.waited)
            ),
            None => writeln!(h, "<li>{}: no jobs</li>", esc(&v.name)),
        };
    }
    h += "</ul>\n";
    if let Some(f) = &c.fidelity {
        h += &fidelity_section(f)?;
    }
    h += "<p>The same figures are in the JSON file beside this page.</p>\n</body></html>\n";
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::super::fidelity::{compare, JobRun, Side};
    use super::fidelity_rows;

    /// A job reads the same in the text table and in the report: one set of
    /// cells serves both.
    #[test]
    fn a_job_reads_the_same_in_the_table_and_the_report() {
        let run = |start, end, nodes| JobRun { queue: "q".into(), arrived: 0.0, start, end, nodes };
        let side = |r: JobRun| {
            let mut side = Side::default();
            side.jobs.insert("ns/j".to_string(), r);
            side
        };
        let f = compare(&side(run(Some(10.0), Some(70.0), 2)), &side(run(Some(25.0), None, 3)), 10.0);
        let want = ["ns/j", "10", "25", "15", "70", "-", "-", "2/3"].map(String::from);
        assert_eq!(f.rows[0].cells(), want);
        let line: Vec<String> = f.text().lines().nth(1).unwrap().split_whitespace().map(String::from).collect();
        assert_eq!(line, want);
        let cells: String = want.iter().map(|c| format!("<td>{c}</td>")).collect();
        assert_eq!(fidelity_rows(&f), format!("<tr>{cells}</tr>\n"));
    }
}
