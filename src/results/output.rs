//! Writing rows: an aligned table on a terminal, TSV when piped, CSV and JSON
//! lines on request. CSV quoting and JSON escaping are the crates' work;
//! table, TSV and CSV fields lose control characters (a title comes from the
//! network, and CSV has no escape for them: a raw ESC reaches the terminal).

use std::borrow::Cow;
use std::io::Write;

use serde::Serialize;

use super::query::Format;
use crate::text::strip_control;

/// A column: its header and, in a table, its width (`None`: the rest of the line).
#[derive(Clone)]
pub struct Column {
    /// Header text.
    pub name: Cow<'static, str>,
    /// Table width in characters.
    pub width: Option<usize>,
}

/// Shorthand for a column list.
pub const fn col(name: &'static str, width: Option<usize>) -> Column {
    Column {
        name: Cow::Borrowed(name),
        width,
    }
}

/// Writes one listing in one format.
pub struct Output<W: Write> {
    format: Format,
    columns: Cow<'static, [Column]>,
    csv: Option<csv::Writer<W>>,
    out: Option<W>,
}

impl<W: Write> Output<W> {
    /// Starts a listing with these columns (a header line except in JSON):
    /// a fixed list, or one built for the listing (custom extractions).
    pub fn start(
        out: W,
        format: Format,
        columns: impl Into<Cow<'static, [Column]>>,
    ) -> std::io::Result<Self> {
        let columns = columns.into();
        let mut output = match format {
            Format::Csv => Output {
                format,
                columns,
                csv: Some(csv::Writer::from_writer(out)),
                out: None,
            },
            _ => Output {
                format,
                columns,
                csv: None,
                out: Some(out),
            },
        };
        if format != Format::Json {
            let names: Vec<String> = output.columns.iter().map(|c| c.name.to_string()).collect();
            output.fields(&names)?;
        }
        Ok(output)
    }

    /// One row: `fields` for table, TSV and CSV (one per column), `json` for JSON lines.
    pub fn row(&mut self, fields: &[String], json: &impl Serialize) -> std::io::Result<()> {
        if self.format == Format::Json {
            let out = self.out.as_mut().expect("JSON writes to the plain writer");
            serde_json::to_writer(&mut *out, json)?;
            return out.write_all(b"\n");
        }
        self.fields(fields)
    }

    /// A line under a table row (the table only), e.g. a referrer.
    pub fn note(&mut self, text: &str) -> std::io::Result<()> {
        if self.format != Format::Table {
            return Ok(());
        }
        let out = self.out.as_mut().expect("tables write to the plain writer");
        writeln!(out, "    {}", strip_control(text))
    }

    fn fields(&mut self, fields: &[String]) -> std::io::Result<()> {
        match self.format {
            Format::Csv => {
                let csv = self.csv.as_mut().expect("CSV has its writer");
                let clean = fields.iter().map(|f| strip_control(f).into_owned());
                csv.write_record(clean).map_err(std::io::Error::other)
            }
            Format::Tsv => {
                let out = self.out.as_mut().expect("TSV writes to the plain writer");
                let line: Vec<_> = fields.iter().map(|f| strip_control(f)).collect();
                writeln!(out, "{}", line.join("\t"))
            }
            Format::Table => {
                let out = self.out.as_mut().expect("tables write to the plain writer");
                let mut line = String::new();
                for (field, column) in fields.iter().zip(self.columns.iter()) {
                    let field = strip_control(field);
                    match column.width {
                        Some(w) => {
                            let cut = truncate(&field, w);
                            line.push_str(&cut);
                            let pad = w + 2 - cut.chars().count();
                            line.extend(std::iter::repeat_n(' ', pad));
                        }
                        None => line.push_str(&field),
                    }
                }
                writeln!(out, "{}", line.trim_end())
            }
            Format::Json => Ok(()),
        }
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> std::io::Result<()> {
        if let Some(csv) = &mut self.csv {
            csv.flush()?;
        }
        if let Some(out) = &mut self.out {
            out.flush()?;
        }
        Ok(())
    }
}

/// At most `width` characters, with `…` where it was cut.
fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut cut: String = s.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    static COLUMNS: [Column; 2] = [col("a", Some(4)), col("b", None)];

    fn render(format: Format, rows: &[[&str; 2]]) -> String {
        let mut buf = Vec::new();
        let mut out = Output::start(&mut buf, format, &COLUMNS).unwrap();
        for r in rows {
            let fields: Vec<String> = r.iter().map(|s| s.to_string()).collect();
            out.row(&fields, &r).unwrap();
        }
        out.finish().unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn tables_tsv_and_csv_never_carry_control_characters() {
        let rows = [["toolong", "x\u{1b}[2J\ty\u{7}"]];
        assert_eq!(render(Format::Table, &rows), "a     b\ntoo…  x[2J y\n");
        assert_eq!(render(Format::Tsv, &rows), "a\tb\ntoolong\tx[2J y\n");
        assert_eq!(render(Format::Csv, &rows), "a,b\ntoolong,x[2J y\n");
    }

    #[test]
    fn csv_and_json_are_escaped_by_their_crates() {
        let rows = [["a,b", "say \"hi\"\n"]];
        assert_eq!(
            render(Format::Csv, &rows),
            "a,b\n\"a,b\",\"say \"\"hi\"\" \"\n"
        );
        assert_eq!(
            render(Format::Json, &rows),
            "[\"a,b\",\"say \\\"hi\\\"\\n\"]\n"
        );
    }
}
