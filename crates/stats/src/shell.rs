//! config.sh read as bash reads it: bash itself sources the file and
//! reports the variables it set, so `${VMSTAT_INTERVAL:-2}`, `$(hostname)`,
//! quoting (`CLIENT_LIST='$HOME'` is the five characters `$HOME`) and
//! anything else the kit's own `source config.sh` would accept mean what
//! they mean to the kit.
//!
//! The file runs as the kit runs it: commands in it run (its output is
//! discarded), with the caller's environment minus the configuration's
//! own variables (so only the file decides them, and `${TMP:-/tmp}` takes
//! its default) and minus `BASH_ENV`/`ENV`. Bash's complaints (a syntax
//! error, a command not found) name the file and line; any of them makes
//! the configuration an error rather than half read. The run is bounded
//! ([`SOURCE_LIMIT`]): its whole process group is killed past it, and it
//! dies with iolab.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Longest a config.sh may take to be sourced.
pub const SOURCE_LIMIT: Duration = Duration::from_secs(10);

/// Sources `file`, lists every variable it set as `NAME=VALUE\0`: new
/// variables and the `known` ones (removed from its environment first),
/// not bash's own (PIPESTATUS and the like change as any file runs).
/// What the file's last command returned is not a refusal (a config.sh
/// may end in `[ -n "$X" ] && Y=1`): only what bash says on stderr, or
/// an `exit` in the file, is.
const SCRIPT: &str = r#"
__iolab_before=" $(compgen -v | tr '\n' ' ') "
set -a
. "$1" >/dev/null
set +a
for __iolab_v in $(compgen -v); do
    case "$__iolab_v" in
        __iolab_*|BASH*|PIPESTATUS|FUNCNAME|GROUPS|LINENO|RANDOM|SRANDOM|SECONDS|EPOCH*|OPTARG|OPTIND|OPTERR|REPLY|MAPFILE|DIRSTACK|COLUMNS|LINES|_) continue ;;
    esac
    case "$__iolab_before" in *" $__iolab_v "*) continue ;; esac
    printf '%s=%s\0' "$__iolab_v" "${!__iolab_v}"
done
"#;

/// What sourcing a config.sh gave.
#[derive(Debug)]
pub enum Sourced {
    /// Every variable the file set, with its value, sorted by name.
    Vars(Vec<(String, String)>),
    /// Bash said something was wrong (its message names the line), or
    /// the file took too long.
    Refused(String),
    /// No bash on this machine.
    NoBash,
}

/// Sources `file` with bash; `known` are the configuration's variables,
/// kept out of the file's environment.
pub fn source(file: &str, known: &[String]) -> io::Result<Sourced> {
    let mut cmd = Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-c", SCRIPT, "iolab-config", file])
        .env_remove("BASH_ENV")
        .env_remove("ENV")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for k in known {
        cmd.env_remove(k);
    }
    // The shell is killed if iolab dies first.
    iolab_launch::end_with_parent(&mut cmd, libc::SIGKILL);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Sourced::NoBash),
        Err(e) => return Err(e),
    };
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(SOURCE_LIMIT) {
        Ok(out) => out?,
        Err(_) => {
            // SAFETY: kill(2) on the shell's own process group (made by
            // process_group(0)); no memory is involved.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            return Ok(Sourced::Refused(format!(
                "sourcing it took longer than {}s; remove what waits (a command substitution, a read)",
                SOURCE_LIMIT.as_secs()
            )));
        }
    };
    let complaint = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !complaint.is_empty() {
        return Ok(Sourced::Refused(complaint));
    }
    if !out.status.success() {
        return Ok(Sourced::Refused(format!(
            "bash could not source it ({})",
            out.status
        )));
    }
    let mut vars: Vec<(String, String)> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .filter_map(|r| {
            let text = String::from_utf8_lossy(r);
            let (k, v) = text.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    vars.sort();
    Ok(Sourced::Vars(vars))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sourced(text: &str) -> Sourced {
        // Removed on drop, also when an assertion fails (the test suite
        // must leave nothing in TMP: scripts/leftovers.sh checks).
        let dir = iolab_core::tmp::PrivateDir::new("iolab-shell").unwrap();
        let f = dir.path().join("c.sh");
        std::fs::write(&f, text).unwrap();
        source(f.to_str().unwrap(), &["VMSTAT_INTERVAL".into()]).unwrap()
    }

    #[test]
    fn bash_reads_defaults_substitutions_and_quotes() {
        let Sourced::Vars(v) = sourced(
            "VMSTAT_INTERVAL=${VMSTAT_INTERVAL:-2}\nHOSTS=$(echo a b)\nCLIENT_LIST='$HOME'\necho noise\n",
        ) else {
            panic!("not read")
        };
        let get = |k: &str| v.iter().find(|(n, _)| n == k).map(|(_, x)| x.as_str());
        assert_eq!(get("VMSTAT_INTERVAL"), Some("2"));
        assert_eq!(get("HOSTS"), Some("a b"));
        assert_eq!(get("CLIENT_LIST"), Some("$HOME"));
    }

    #[test]
    fn a_last_command_that_returns_non_zero_is_no_refusal() {
        let Sourced::Vars(v) =
            sourced("VMSTAT_INTERVAL=1\n[ -n \"$FOO_IOLAB\" ] && DISK_INTERVAL=1\n")
        else {
            panic!("refused")
        };
        assert!(v.iter().any(|(n, x)| n == "VMSTAT_INTERVAL" && x == "1"));
        let Sourced::Refused(_) = sourced("VMSTAT_INTERVAL=1\nexit 3\n") else {
            panic!("an exit in the file was accepted")
        };
    }

    #[test]
    fn bash_complaints_name_the_line() {
        let Sourced::Refused(why) = sourced("A=1\nno_such_command_iolab\n") else {
            panic!("accepted")
        };
        assert!(why.contains("line 2"), "{why}");
    }
}
