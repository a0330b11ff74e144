//! The report page: headings, paragraphs, tables and figures (a PNG linking to its SVG), as one
//! self-contained HTML file.

use std::fmt::Write;

/// An HTML page under construction.
pub struct Page {
    title: String,
    body: String,
}

/// Text with `&`, `<`, `>` and `"` escaped.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A float in its shortest round-trip form (what the tables print, so readers can compare them
/// with the data bit for bit).
pub fn number(x: f64) -> String {
    format!("{x}")
}

/// An optional float as [`number`], or `—`.
pub fn maybe(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_string(), number)
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1100px}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:2px 8px;\
text-align:left;font-variant-numeric:tabular-nums}th{background:#eee}\
tr.method td{background:#fff3c4;font-weight:bold}figure{margin:1em 0}\
img{max-width:100%;border:1px solid #ddd}p.note{color:#855}";

impl Page {
    /// An empty page with a title (also its first heading).
    pub fn new(title: &str) -> Page {
        let mut page = Page {
            title: title.to_string(),
            body: String::new(),
        };
        let _ = writeln!(page.body, "<h1>{}</h1>", escape(title));
        page
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h2>{}</h2>", escape(text));
    }

    /// A paragraph of text.
    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A paragraph set apart as a note (something missing or skipped).
    pub fn note(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }

    /// A table with a header row (none when `headers` is empty); rows whose flag is set are
    /// highlighted.
    pub fn table(&mut self, headers: &[&str], rows: &[(bool, Vec<String>)]) {
        self.body.push_str("<table>\n");
        if !headers.is_empty() {
            self.body.push_str("<tr>");
            for h in headers {
                let _ = write!(self.body, "<th>{}</th>", escape(h));
            }
            self.body.push_str("</tr>\n");
        }
        for (highlight, cells) in rows {
            self.body.push_str(if *highlight {
                "<tr class=\"method\">"
            } else {
                "<tr>"
            });
            for cell in cells {
                let _ = write!(self.body, "<td>{}</td>", escape(cell));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// A two-column table of names and values.
    pub fn facts(&mut self, facts: &[(&str, String)]) {
        let rows: Vec<_> = facts
            .iter()
            .map(|(name, value)| (false, vec![name.to_string(), value.clone()]))
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

    /// Appends another page's content (its title becomes a section heading).
    pub fn append(&mut self, other: Page) {
        self.heading(&other.title);
        // The other page's own first-level heading is replaced by the section heading above.
        let body = other
            .body
            .split_once("</h1>\n")
            .map_or(other.body.as_str(), |(_, rest)| rest);
        self.body.push_str(body);
    }

    /// The whole HTML document.
    pub fn render(&self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
            escape(&self.title),
            self.body
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
        assert_eq!(maybe(None), "—");
        assert_eq!(number(0.1), "0.1");
    }
}
