//! HTML report: the Markdown report's content as HTML, with the SVG charts
//! inline. Every text is escaped; the output is well-formed XHTML-compatible
//! markup (checked by the tests with an XML parser).

use std::fmt::Write;

use super::charts::*;
use super::tables::{tables, Table};
use super::trial::blocks;
use crate::advice::Diagnosis;
use crate::error::AdvisorError;

/// Escapes text for HTML/XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Drops the `<?xml ...?>` prolog plotters may emit, so the SVG can be inlined.
fn inline(svg: String) -> String {
    match svg.find("<svg") {
        Some(i) => svg[i..].to_string(),
        None => svg,
    }
}

pub fn html(d: &Diagnosis) -> Result<String, AdvisorError> {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>redoctor diagnosis of pid {}</title>\
<style>body{{font-family:sans-serif;max-width:1000px;margin:auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px}}.verdict{{font-size:1.3em;font-weight:bold}}</style></head><body>\n",
        d.pid
    );
    let _ = writeln!(o, "<h1>redoctor diagnosis of pid {}</h1>", d.pid);
    let _ = writeln!(o, "<p class=\"verdict\">{}</p>", esc(&d.verdict.text));
    let _ = writeln!(
        o,
        "<p>{} ({} cores, binlog {}), {} rules, {} window(s).</p>",
        esc(&d.facts.engine),
        d.facts.cores,
        if d.facts.binlog { "ON" } else { "OFF" },
        d.rules_evaluated,
        d.windows.len()
    );
    for r in &d.recommendations {
        let _ = writeln!(
            o,
            "<h2><code>{}</code>: {} &#8594; {}</h2><ul><li>rule <code>{}</code>, {:?}, confidence {:.2}</li><li>why: {}</li><li>expected: {}</li><li>sources: {}</li>{}</ul>",
            esc(&r.setting),
            esc(&r.current),
            esc(&r.proposed),
            esc(&r.rule),
            r.severity,
            r.confidence,
            esc(&r.rationale),
            esc(&r.expected_effect),
            esc(&r.sources.join("; ")),
            super::apply_lines(d, r)
                .into_iter()
                .map(|(label, line, code)| if code {
                    format!("<li>{label}: <code>{}</code></li>", esc(&line))
                } else {
                    format!("<li>{label}: {}</li>", esc(&line))
                })
                .collect::<String>()
        );
        let _ = writeln!(
            o,
            "<p>Condition: <code>{}</code></p><table><tr><th>evidence</th><th>value</th></tr>",
            esc(&r.condition)
        );
        for e in &r.evidence {
            let _ = writeln!(
                o,
                "<tr><td><code>{}</code></td><td>{}</td></tr>",
                esc(&e.name),
                esc(&e.value)
            );
        }
        o.push_str("</table>\n");
    }
    for b in d.trial.iter().flat_map(blocks) {
        let _ = writeln!(o, "<h2>{}</h2><ul>", esc(&b.heading));
        for (k, v) in &b.lines {
            let _ = writeln!(o, "<li>{k}: {}</li>", esc(v));
        }
        o.push_str("</ul>\n");
        if let Some(t) = &b.windows {
            table(&mut o, t);
        }
    }
    if !d.not_applied.is_empty() {
        o.push_str("<h2>Not applied</h2><table><tr><th>rule</th><th>setting</th><th>status</th><th>reason</th></tr>\n");
        for n in &d.not_applied {
            let _ = writeln!(
                o,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&n.rule),
                esc(&n.setting),
                esc(&n.status.to_string()),
                esc(&n.reason)
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str("<h2>Charts</h2>\n");
    for svg in [
        timeline_svg(d)?,
        wakeup_heatmap_svg(d)?,
        runq_latency_svg(d)?,
        fsync_latency_svg(d)?,
    ] {
        let _ = writeln!(o, "<div>{}</div>", inline(svg));
    }
    for t in tables(d) {
        let _ = writeln!(o, "<h2>{}</h2>", esc(t.title));
        table(&mut o, &t);
    }
    o.push_str("</body></html>\n");
    Ok(o)
}

fn table(o: &mut String, t: &Table) {
    o.push_str("<table><tr>");
    for h in &t.header {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>\n");
    for r in &t.rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", esc(c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}
