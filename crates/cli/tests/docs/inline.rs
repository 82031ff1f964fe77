//! The docs test's reading of inline commands: `` `iolab TOOL -opt ...` ``
//! in the prose of a doc (outside fenced blocks), the tool they name and
//! the options they give, so that each option can be checked against the
//! tool's own help.
//!
//! An inline command is mostly a form (`iolab report SERIES... -o DIR`)
//! rather than a line to run, so it is not run: its options are looked up
//! in `iolab TOOL --help` (and xdd's `-fullhelp`), which lists every
//! option the parser takes. An option that is not there (misspelt, or
//! removed from the tool) fails the docs test.

/// One inline `iolab ...` span of a doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inline {
    /// The line of the doc it starts on (1-based).
    pub line: usize,
    /// The span's text, whitespace collapsed, `\|` (a table's) read as `|`.
    pub text: String,
    /// The command words after `iolab` (`["results", "export"]`).
    pub path: Vec<String>,
    /// The options it gives, without their values (`--s3.bucket`, `-W`).
    pub options: Vec<String>,
}

/// Every inline span of a markdown text that runs an iolab command with
/// options (a span naming no command, as `iolab <tool> ...`, is skipped).
pub fn inline_commands(text: &str) -> Vec<Inline> {
    let mut out = Vec::new();
    for (line, span) in prose_spans(text) {
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        let span = span.replace("\\|", "|");
        let Some((path, options)) = command_of(&span) else {
            continue;
        };
        if !path.is_empty() && !options.is_empty() {
            out.push(Inline {
                line,
                text: span,
                path,
                options,
            });
        }
    }
    out
}

/// The backtick spans outside fenced blocks, with the line each starts on.
fn prose_spans(text: &str) -> Vec<(usize, String)> {
    let mut prose = String::with_capacity(text.len());
    let mut fenced = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(l);
        }
        // Keep the line count, so that offsets give line numbers.
        prose.push('\n');
    }
    let mut spans = Vec::new();
    let mut rest = prose.as_str();
    let mut at = 0;
    while let Some(open) = rest.find('`') {
        // ``` `` x `` ``` spans (several backticks) do not hold commands here.
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        let line = prose[..at + open].matches('\n').count() + 1;
        spans.push((line, after[..close].to_string()));
        let used = open + 1 + close + 1;
        at += used;
        rest = &rest[used..];
    }
    spans
}

/// The command words and options of a span from its `iolab` word on;
/// None when it holds no iolab command (`cargo test -p iolab` included).
fn command_of(span: &str) -> Option<(Vec<String>, Vec<String>)> {
    let words: Vec<&str> = span.split(' ').collect();
    let start = words.iter().enumerate().position(|(i, w)| {
        let w = w.strip_prefix("$(").unwrap_or(w);
        w == "iolab" && !(i > 0 && ["-p", "--package"].contains(&words[i - 1]))
    })?;
    let mut path = Vec::new();
    let mut options = Vec::new();
    let mut in_path = true;
    for w in &words[start + 1..] {
        // The end of the iolab command: a pipe, a list, the command that
        // `stats run ... --` runs.
        if ["|", "||", "&&", ";", "--", "&"].contains(w) {
            break;
        }
        if in_path && is_command_word(w) {
            path.push(w.to_string());
            continue;
        }
        in_path = false;
        let w = w.trim_start_matches(['[', '(']);
        let w = w.trim_end_matches([']', ')', ',', '.', ';', ':']);
        for part in w.split('|') {
            if let Some(o) = option_name(part) {
                options.push(o.to_string());
            }
        }
    }
    Some((path, options))
}

/// A subcommand word: lower case letters, digits, `-` and `_`.
fn is_command_word(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_lowercase())
        && w.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// `--s3.bucket=runs` -> `--s3.bucket`; `-W` -> `-W`; `-5`, `-`, `--`: None.
fn option_name(word: &str) -> Option<&str> {
    let name = word.split('=').next().unwrap_or("");
    let body = name.trim_start_matches('-');
    let dashes = name.len() - body.len();
    ((1..=2).contains(&dashes) && body.starts_with(|c: char| c.is_ascii_alphabetic()))
        .then_some(name)
}

/// Whether a help text lists `option` as a word of its own.
pub fn help_lists(help: &str, option: &str) -> bool {
    let b = help.as_bytes();
    help.match_indices(option).any(|(i, _)| {
        let before = if i == 0 { b' ' } else { b[i - 1] };
        let after = b.get(i + option.len()).copied().unwrap_or(b' ');
        let inside = |c: u8| c.is_ascii_alphanumeric() || b"-_.".contains(&c);
        !inside(before) && !inside(after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_give_their_command_and_options() {
        let md = "Run `iolab results export ID --json\\|--csv [-o FILE]`\nor\n`mpirun -n R iolab mdtest -d /x --s3.bucket=b -W 5` and `cargo test -p iolab --test e2e`,\n```sh\n`iolab xdd -op read`\n```\n`iolab <tool> ... --store PATH`, `iolab demo`.\n";
        let v = inline_commands(md);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!((v[0].line, v[1].line), (1, 3));
        assert_eq!(v[0].path, ["results", "export"]);
        assert_eq!(v[0].options, ["--json", "--csv", "-o"]);
        assert_eq!(v[1].path, ["mdtest"]);
        assert_eq!(v[1].options, ["-d", "--s3.bucket", "-W"]);
    }

    #[test]
    fn a_listed_option_is_a_word_of_the_help() {
        let help = "  -X, --verify-read   verify\n  --s3.bucket=NAME  bucket\n  -R[SEED]\n";
        assert!(help_lists(help, "-X"));
        assert!(help_lists(help, "--s3.bucket"));
        assert!(help_lists(help, "-R"));
        assert!(!help_lists(help, "--verify"));
        assert!(!help_lists(help, "--s3"));
        assert!(!help_lists(help, "-x"));
    }
}
