//! The docs test's reading of markdown: console blocks, their steps, and
//! the comparison of an example's expected output with what ran.
//!
//! A console block is a fence opened with ```` ```console ````. In it, a
//! line starting with `$ ` is a command (a line ending in `\` goes on on
//! the next line); the lines after it, up to the next command, are the
//! output the example shows; a line `? N` says the command exits with
//! status N (0 when there is none). In the shown output, a line `...`
//! stands for any number of lines, and `...` inside a line for any text
//! (figures, times, host names).

/// One command of a console block and what it should give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The line of the doc the command starts on (1-based).
    pub line: usize,
    /// The command as a shell reads it (continuation lines included).
    pub command: String,
    /// The output shown after it (stdout and stderr as a terminal shows
    /// them); empty: not checked.
    pub expected: Vec<String>,
    /// The exit status it should end with.
    pub status: i32,
}

/// A console block: its steps, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// Its commands.
    pub steps: Vec<Step>,
}

/// Every console block of a markdown text.
pub fn console_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, l)) = lines.next() {
        // A fence may be indented (inside a list item); its lines then
        // carry the same indentation, which is not part of them.
        if l.trim() != "```console" {
            continue;
        }
        let indent = l.len() - l.trim_start().len();
        let mut block = Block {
            line: i + 1,
            steps: Vec::new(),
        };
        let mut cont = false;
        // The word that ends a here-document the command opened.
        let mut heredoc: Option<String> = None;
        for (j, l) in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            let l = match l.get(..indent) {
                Some(pad) if pad.trim().is_empty() => &l[indent..],
                _ => l.trim_start(),
            };
            if cont || heredoc.is_some() {
                let s = block.steps.last_mut().expect("a continued command");
                s.command.push('\n');
                s.command.push_str(l);
                if heredoc.as_deref() == Some(l) {
                    heredoc = None;
                } else if heredoc.is_none() {
                    cont = l.ends_with('\\');
                    heredoc = heredoc_end(l);
                }
            } else if let Some(cmd) = l.strip_prefix("$ ") {
                block.steps.push(Step {
                    line: j + 1,
                    command: cmd.to_string(),
                    expected: Vec::new(),
                    status: 0,
                });
                cont = cmd.ends_with('\\');
                heredoc = heredoc_end(cmd);
            } else if let Some(s) = block.steps.last_mut() {
                match l.strip_prefix("? ").map(|n| n.trim().parse::<i32>()) {
                    Some(Ok(n)) => s.status = n,
                    _ => s.expected.push(l.trim_end().to_string()),
                }
            }
        }
        blocks.push(block);
    }
    blocks
}

/// The word ending the here-document a command line opens (`<<EOF`,
/// `<<'EOF'`, `<<-EOF`): its lines are the command's, not its output.
fn heredoc_end(line: &str) -> Option<String> {
    let rest = line.split_once("<<")?.1;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    // `$((1 << 2))` is a shift, not a here-document.
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        .then_some(word)
}

/// Whether `actual` is what `expected` shows; the error says where they part.
pub fn output_matches(expected: &[String], actual: &str) -> Result<(), String> {
    if expected.iter().all(|l| l.is_empty()) {
        return Ok(());
    }
    let want: Vec<&str> = trim_blank_ends(expected.iter().map(String::as_str).collect());
    let got: Vec<&str> = trim_blank_ends(actual.lines().map(str::trim_end).collect());
    if lines_match(&want, &got) {
        Ok(())
    } else {
        Err(format!(
            "the output differs from the doc.\n--- doc:\n{}\n--- got:\n{}",
            want.join("\n"),
            got.join("\n")
        ))
    }
}

fn trim_blank_ends(mut v: Vec<&str>) -> Vec<&str> {
    while v.last().is_some_and(|l| l.trim().is_empty()) {
        v.pop();
    }
    while v.first().is_some_and(|l| l.trim().is_empty()) {
        v.remove(0);
    }
    v
}

/// Line-wise match where a `...` line takes any number of lines.
fn lines_match(want: &[&str], got: &[&str]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w.trim() == "..." => {
            (0..=got.len()).any(|skip| lines_match(rest, &got[skip..]))
        }
        Some((w, rest)) => match got.split_first() {
            Some((g, grest)) => line_matches(w, g) && lines_match(rest, grest),
            None => false,
        },
    }
}

/// One line, where `...` takes any text.
pub fn line_matches(want: &str, got: &str) -> bool {
    let parts: Vec<&str> = want.split("...").collect();
    if parts.len() == 1 {
        return want == got;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !got.starts_with(first) || got.len() < first.len() + last.len() || !got.ends_with(last) {
        return false;
    }
    let mut rest = &got[first.len()..got.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_steps_statuses_and_continuations_are_read() {
        let md = "text\n```console\n$ iolab a \\\n    -b\nout 1\n...\n$ iolab c\n? 2\n```\n```sh\n$ not this\n```\n";
        let b = console_blocks(md);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].line, 2);
        let s = &b[0].steps;
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].command, "iolab a \\\n    -b");
        assert_eq!(s[0].expected, ["out 1", "..."]);
        assert_eq!((s[0].status, s[1].status, s[1].line), (0, 2, 7));
    }

    #[test]
    fn a_here_document_belongs_to_its_command() {
        let md = "```console\n$ cat > c.sh <<'EOF'\nA=1\n$ not a command\nEOF\nout\n$ next\n```\n";
        let s = &console_blocks(md)[0].steps;
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].command,
            "cat > c.sh <<'EOF'\nA=1\n$ not a command\nEOF"
        );
        assert_eq!(s[0].expected, ["out"]);
        assert_eq!(heredoc_end("x <<-\"END\" y").as_deref(), Some("END"));
        assert_eq!(heredoc_end("echo a << b"), Some("b".to_string()));
        assert_eq!(heredoc_end("echo $((1 << 2))"), None);
    }

    #[test]
    fn elisions_take_lines_and_text() {
        let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(output_matches(&e(&["a ... c", "...", "z"]), "a b c\nx\ny\nz\n").is_ok());
        assert!(output_matches(&e(&["a ... c", "z"]), "a b c\nx\nz\n").is_err());
        assert!(output_matches(&e(&["rate ... ops"]), "rate 12 op").is_err());
        assert!(output_matches(&e(&[]), "anything").is_ok());
        assert!(line_matches("...", ""));
        assert!(!line_matches("ab...ba", "aba"));
    }
}
