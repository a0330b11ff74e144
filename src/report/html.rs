//! The report page: headings (with a table of contents), paragraphs, sortable tables whose
//! numbers are printed with sensible digits (the full value as the cell's title), figures (a
//! PNG linking to its SVG) and the containers the page's script draws into, as one
//! self-contained HTML file: the data embedded as JSON, the style and the script inline, no
//! server and no network.

use super::digits;
use crate::error::{MiloError, Result};
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

/// The page's style.
const STYLE: &str = include_str!("assets/report.css");
/// The page's script: draws the widgets from the embedded data, sorts tables, reports its own
/// errors into `#errors`.
const SCRIPT: &str = include_str!("assets/report.js");

/// A table cell: the text shown and, for a rounded number, the full value (shown on hover and
/// on a click, and used to sort).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    text: String,
    full: Option<String>,
}

impl Cell {
    /// A cell holding `text` as it is.
    pub fn text(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            full: None,
        }
    }

    /// A rounded number with its full value.
    fn rounded(text: String, full: String) -> Cell {
        let full = (full != text).then_some(full);
        Cell { text, full }
    }

    /// A float score to 10 significant digits.
    pub fn score(x: f64) -> Cell {
        Cell::rounded(digits::score(x), format!("{x}"))
    }

    /// An exact decimal score (40 digits in the records) to 10 significant digits.
    pub fn exact(text: &str) -> Cell {
        Cell::rounded(digits::exact_score(text), text.to_string())
    }

    /// A quality, cost or time to 3 significant digits (integer digits kept).
    pub fn measure(x: f64) -> Cell {
        Cell::rounded(digits::measure(x), format!("{x}"))
    }

    /// A gap or difference in scientific notation with 3 significant digits.
    pub fn gap(x: f64) -> Cell {
        Cell::rounded(digits::gap(x), format!("{x}"))
    }

    /// `cell` of a value that may be absent, else `—`.
    pub fn maybe<T>(value: Option<T>, cell: impl FnOnce(T) -> Cell) -> Cell {
        value.map_or_else(|| Cell::text("—"), cell)
    }

    fn render(&self, out: &mut String) {
        match &self.full {
            Some(full) => {
                let full = escape(full);
                let _ = write!(
                    out,
                    "<td class=\"num\" title=\"{full}\" data-sort=\"{full}\">{}</td>",
                    escape(&self.text)
                );
            }
            None => {
                let _ = write!(out, "<td>{}</td>", escape(&self.text));
            }
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::text(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::text(text)
    }
}

/// An HTML page under construction.
pub struct Page {
    title: String,
    body: String,
    /// `(anchor, text)` of every section heading, for the table of contents.
    headings: Vec<(String, String)>,
    /// The JSON the script draws from.
    data: Option<String>,
    /// Reload the page every this many seconds (a report being watched).
    refresh: Option<u32>,
}

/// Text scrubbed of the secrets in use, with `&`, `<`, `>` and `"` escaped.
pub fn escape(text: &str) -> String {
    crate::secrets::scrub(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JSON text scrubbed of the secrets in use, safe inside a `<script>` element (no `<`, `>` or `&`
/// that could close it).
fn script_json(json: &str) -> String {
    crate::secrets::scrub_json(json)
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

impl Page {
    /// An empty page with a title (also its first-level heading).
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_string(),
            body: String::new(),
            headings: Vec::new(),
            data: None,
            refresh: None,
        }
    }

    /// A section heading (listed in the table of contents).
    pub fn heading(&mut self, text: &str) {
        let base: String = text
            .chars()
            .map(|c| match c.is_ascii_alphanumeric() {
                true => c.to_ascii_lowercase(),
                false => '-',
            })
            .collect();
        let mut anchor = base.clone();
        let mut k = 1;
        while self.headings.iter().any(|(a, _)| *a == anchor) {
            k += 1;
            anchor = format!("{base}-{k}");
        }
        let _ = writeln!(self.body, "<h2 id=\"{anchor}\">{}</h2>", escape(text));
        self.headings.push((anchor, text.to_string()));
    }

    /// A paragraph of text.
    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A paragraph set apart as a note (something missing or skipped).
    pub fn note(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }

    /// A table with a header row (sortable by clicking a header; none when `headers` is
    /// empty); rows whose flag is set are highlighted. Wide tables scroll inside their box.
    pub fn table(&mut self, headers: &[&str], rows: &[(bool, Vec<Cell>)]) {
        let sortable = !headers.is_empty();
        self.body.push_str(if sortable {
            "<div class=\"table-wrap\"><table class=\"sortable\">\n"
        } else {
            "<div class=\"table-wrap\"><table class=\"facts\">\n"
        });
        if sortable {
            self.body.push_str("<thead><tr>");
            for h in headers {
                let _ = write!(self.body, "<th>{}</th>", escape(h));
            }
            self.body.push_str("</tr></thead>\n");
        }
        self.body.push_str("<tbody>\n");
        for (highlight, cells) in rows {
            self.body.push_str(if *highlight {
                "<tr class=\"method\">"
            } else {
                "<tr>"
            });
            for cell in cells {
                cell.render(&mut self.body);
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</tbody></table></div>\n");
    }

    /// A two-column table of names and values.
    pub fn facts(&mut self, facts: Vec<(&str, Cell)>) {
        let rows: Vec<_> = facts
            .into_iter()
            .map(|(name, value)| (false, vec![Cell::text(name), value]))
            .collect();
        self.table(&[], &rows);
    }

    /// A figure saved as `STEM.png` and `STEM.svg` beside the page, with a caption.
    pub fn figure(&mut self, stem: &str, caption: &str) {
        let stem = escape(stem);
        let _ = writeln!(
            self.body,
            "<figure><a href=\"{stem}.svg\"><img src=\"{stem}.png\" alt=\"{caption}\"></a>\
             <figcaption>{caption} (<a href=\"{stem}.svg\">SVG</a>)</figcaption></figure>",
            caption = escape(caption)
        );
    }

    /// An empty container with this id that the page's script fills from the data.
    pub fn widget(&mut self, id: &str) {
        let _ = writeln!(
            self.body,
            "<div class=\"widget\" id=\"{}\"><noscript>(needs JavaScript)</noscript></div>",
            escape(id)
        );
    }

    /// The data the script draws the widgets from (embedded as JSON).
    pub fn set_data(&mut self, data: &impl Serialize) -> Result<()> {
        let json = serde_json::to_string(data).map_err(|e| MiloError::Malformed {
            path: PathBuf::from(&self.title),
            message: format!("cannot embed the report's data: {e}"),
        })?;
        self.data = Some(json);
        Ok(())
    }

    /// Makes the page reload itself every `seconds` (a report rewritten by `--watch`).
    pub fn set_refresh(&mut self, seconds: u32) {
        self.refresh = Some(seconds);
    }

    /// Appends another page's content (its title becomes a section heading; its data is kept
    /// when this page has none).
    pub fn append(&mut self, other: Page) {
        self.heading(&other.title);
        self.body.push_str(&other.body);
        self.headings.extend(other.headings);
        if self.data.is_none() {
            self.data = other.data;
        }
    }

    /// The whole HTML document.
    pub fn render(&self) -> String {
        let mut contents = String::from("<nav class=\"toc\">");
        for (anchor, text) in &self.headings {
            let _ = write!(contents, "<a href=\"#{anchor}\">{}</a>", escape(text));
        }
        contents.push_str("</nav>\n");
        let data = self.data.as_deref().unwrap_or("null");
        let refresh = match self.refresh {
            Some(seconds) => format!(
                "<p class=\"live\">Live: rewritten as records arrive; this page reloads every \
                 {seconds} s.</p>\n"
            ),
            None => String::new(),
        };
        let title = escape(&self.title);
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body data-refresh=\"{}\">\n\
             <h1>{title}</h1>\n{refresh}{contents}{}\
             <pre id=\"errors\" hidden></pre>\n\
             <script type=\"application/json\" id=\"milo-data\">{}</script>\n\
             <script>{SCRIPT}</script>\n</body>\n</html>\n",
            self.refresh.unwrap_or(0),
            self.body,
            script_json(data),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_escape_text_and_link_figures() {
        let mut page = Page::new("a < b");
        page.table(&["x"], &[(true, vec!["1 & 2".into()])]);
        page.figure("tree", "the \"tree\"");
        let html = page.render();
        assert!(html.contains("<h1>a &lt; b</h1>"));
        assert!(html.contains("<tr class=\"method\"><td>1 &amp; 2</td></tr>"));
        assert!(html.contains("<a href=\"tree.svg\"><img src=\"tree.png\""));
        assert!(!html.contains("reloads every"));
    }

    #[test]
    fn rounded_cells_keep_the_full_value_as_title_and_sort_key() {
        let mut page = Page::new("t");
        page.table(
            &["score", "quality", "missing"],
            &[(
                false,
                vec![
                    Cell::score(2.9200000000000017),
                    Cell::measure(4.0),
                    Cell::maybe(None::<f64>, Cell::gap),
                ],
            )],
        );
        let html = page.render();
        assert!(
            html.contains(
                "<td class=\"num\" title=\"2.9200000000000017\" data-sort=\"2.9200000000000017\">2.920000000</td>"
            ),
            "{html}"
        );
        assert!(html.contains("<td class=\"num\" title=\"4\" data-sort=\"4\">4.00</td>"));
        assert!(html.contains("<td>—</td>"));
        assert!(html.contains("<table class=\"sortable\">"));
    }

    #[test]
    fn data_cannot_close_its_script_and_headings_get_unique_anchors() {
        let mut page = Page::new("t");
        page.heading("Best so far");
        page.heading("Best so far");
        page.set_data(&serde_json::json!({ "edit": "</script><b>&" }))
            .unwrap();
        page.set_refresh(5);
        let html = page.render();
        assert!(html.contains("\\u003c/script\\u003e\\u003cb\\u003e\\u0026"));
        assert_eq!(html.matches("</script>").count(), 2);
        assert!(html.contains("<h2 id=\"best-so-far\">") && html.contains("id=\"best-so-far-2\""));
        assert!(html.contains("<a href=\"#best-so-far-2\">"));
        assert!(html.contains("data-refresh=\"5\"") && html.contains("reloads every 5 s"));
    }
}
