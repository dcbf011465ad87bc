//! Report rendering: text for the terminal, JSON (the [`Diagnosis`] itself,
//! versioned), Markdown for tickets, HTML with inline SVG charts.

mod brief;
mod charts;
mod html;
mod markdown;
mod tables;
mod text;
mod trial;

use crate::advice::Diagnosis;
use crate::error::AdvisorError;

pub use brief::brief;
pub use charts::{fsync_latency_svg, runq_latency_svg, timeline_svg, wakeup_heatmap_svg};
pub use html::html;
pub use markdown::markdown;
pub use text::text;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Html,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "md" | "markdown" => Ok(Format::Markdown),
            "html" => Ok(Format::Html),
            _ => Err(format!(
                "unknown report format '{s}': use text, json, md or html"
            )),
        }
    }
}

/// Renders `d` in `format`: the text report in one screen ([`brief`]).
pub fn render(d: &Diagnosis, format: Format) -> Result<String, AdvisorError> {
    render_with(d, format, false)
}

/// Renders `d` in `format`; `verbose` text is the whole report ([`text`]).
/// The other formats always carry everything.
pub fn render_with(d: &Diagnosis, format: Format, verbose: bool) -> Result<String, AdvisorError> {
    Ok(match format {
        Format::Text if verbose => text(d),
        Format::Text => brief(d),
        Format::Json => d.to_json(),
        Format::Markdown => markdown(d),
        Format::Html => html(d)?,
    })
}

/// How to apply a recommendation on the diagnosed server, as labelled
/// lines (label, text, whether the text is a command or statement): the
/// one way the report's formats all print.
pub(crate) fn apply_lines(
    d: &Diagnosis,
    r: &crate::advice::Recommendation,
) -> Vec<(&'static str, String, bool)> {
    match d.facts.engine.as_str() {
        "postgresql" => {
            let mut v = vec![("apply", r.apply_engine.clone(), false)];
            if let Some(sql) = &r.apply_postgresql {
                v.push(("SQL", sql.clone(), true));
            }
            v
        }
        "mariadb" => vec![("apply (MariaDB)", r.apply_engine.clone(), false)],
        _ => vec![
            ("apply (bundled engine)", r.apply_engine.clone(), false),
            match &r.apply_mysql {
                Some(m) => ("apply (MySQL 8)", m.clone(), true),
                None => ("apply (MySQL 8)", "no MySQL 8 equivalent".into(), false),
            },
        ],
    }
}
