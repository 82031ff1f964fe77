//! A man page (roff, section 1) generated from an option table, so a
//! legacy tool's page lists exactly the options its parser reads, with
//! the same help lines as `-help`. clap's generator cannot describe these
//! command lines (single-dash long names, several values per option).

use crate::entry::{Arity, Entry};

/// What a page says besides the options.
pub struct Page<'a> {
    /// The page's name (`iolab-xdd`).
    pub name: &'a str,
    /// One line after the name in NAME.
    pub about: &'a str,
    /// The SYNOPSIS line.
    pub synopsis: &'a str,
    /// Paragraphs of DESCRIPTION.
    pub description: &'a [&'a str],
}

/// Escapes text for roff: backslashes, and a leading dot or quote that
/// roff would read as a request.
fn esc(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    match s.starts_with('.') || s.starts_with('\'') {
        true => format!("\\&{s}"),
        false => s,
    }
}

/// The page, one `.TP` entry per option (its label, other names and
/// values, then its help line).
pub fn render<R, C>(page: &Page<'_>, table: &[Entry<R, C>]) -> String {
    let mut out = format!(
        ".TH {} 1\n.SH NAME\n{} \\- {}\n.SH SYNOPSIS\n{}\n.SH DESCRIPTION\n",
        page.name.to_uppercase(),
        esc(page.name),
        esc(page.about),
        esc(page.synopsis)
    );
    for p in page.description {
        out.push_str(&format!("{}\n.PP\n", esc(p)));
    }
    out.push_str(".SH OPTIONS\n");
    for e in table {
        let mut names = vec![e.label()];
        let dash = if e.arity == Arity::Words { "-" } else { "--" };
        if e.short.is_some() && !e.name.is_empty() {
            names.push(format!("--{}", e.name));
        }
        names.extend(e.aliases.iter().map(|a| format!("{dash}{a}")));
        let mut head = format!("\\fB{}\\fR", esc(&names.join(", ")));
        if !e.args.is_empty() {
            head.push_str(&format!(" \\fI{}\\fR", esc(e.args)));
        }
        out.push_str(&format!(".TP\n{head}\n{}\n", esc(e.help)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Check;

    static TABLE: &[Entry<u64, u64>] = &[Entry {
        name: "items",
        short: Some('n'),
        aliases: &[],
        arity: Arity::Value,
        scoped: false,
        args: "N",
        help: ".items per task",
        apply: |_, _, _| Ok(()),
        example: "-n 1",
        check: Check::Ok(|_| true),
    }];

    #[test]
    fn every_entry_is_a_tagged_paragraph_with_roff_escaped() {
        let page = Page {
            name: "t",
            about: "a tool",
            synopsis: "t [-n N]",
            description: &[],
        };
        let text = render(&page, TABLE);
        assert!(text.starts_with(".TH T 1\n"), "{text}");
        assert!(
            text.contains(".TP\n\\fB\\-n, \\-\\-items\\fR \\fIN\\fR\n\\&.items per task\n"),
            "{text}"
        );
    }
}
