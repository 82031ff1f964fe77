//! Starting iolab on other hosts, for the tools that span hosts (XDD's
//! end-to-end copy and `xddcp`, the network self-test, the surveys).
//!
//! The remote shell is a command prefix, as Open MPI's `plm_rsh_agent`:
//! the program is run as `AGENT... HOST COMMAND...`. It comes from an
//! option, else from [`RSH_ENV`], else it is `ssh -o BatchMode=yes`. So
//! `IOLAB_RSH="exec:ip netns exec"` runs "hosts" that are network
//! namespaces, and `IOLAB_RSH="exec:srun -N1 -w"` runs them through Slurm
//! (as one task sharing the allocation's CPUs: `-n1 --overlap` are added).
//!
//! Agents differ in how they pass the command. ssh, rsh and their kin
//! join the words with spaces and hand the string to a shell on the far
//! side, so each word must be shell-quoted; `ip netns exec`, `srun` or
//! `docker exec` pass the words on as they are. One rule, whatever the
//! agent is called ([`ArgStyle`]): every word is quoted for a POSIX shell
//! (shlex), unless the specification starts with `exec:`, which passes
//! the words on untouched. `shell:` says the default explicitly, and
//! `local` alone runs every host's command on this host (agents on
//! loopback ports standing for hosts). Words
//! that need no quoting (paths, numbers, options) are the same either
//! way, so `ip netns exec` without the prefix works until a word holds a
//! space, a quote or a `$`. A structured value that always would (a
//! JSON spec) goes as a [`plain_word`], which needs none.
//!
//! Secrets never go on the command line, where `ps` shows them to every
//! user: [`RemoteShell::spawn_with_stdin`] hands them to the far side on
//! its standard input, which stays open while the command runs; the far
//! side takes its closing as the end of the run that started it.
//!
//! ```
//! use iolab_launch::{ArgStyle, RemoteShell};
//! let ssh = RemoteShell::parse("ssh -p 2222").unwrap();
//! assert_eq!(ssh.style, ArgStyle::Shell);
//! let argv = ssh.argv("node7", &["iolab".into(), "xdd".into(), "-target".into(), "a b".into()], &[]).unwrap();
//! assert_eq!(argv, ["ssh", "-p", "2222", "node7", "iolab", "xdd", "-target", "'a b'"]);
//! let ns = RemoteShell::parse("exec:ip netns exec").unwrap();
//! assert_eq!(ns.argv("h1", &["iolab".into(), "a b".into()], &[]).unwrap(), ["ip", "netns", "exec", "h1", "iolab", "a b"]);
//! ```

mod remote;

pub use remote::{Finished, Remote, WaitError, STEP_GRACE};

use std::ffi::OsString;

/// The environment variable [`end_with_parent`] sets for its child:
/// `PID:SIGNAL`, the parent whose death sends that signal. The kernel
/// sends it again each time the dying parent's threads exit and hand the
/// child on to one another (two or three times for one `kill -9`, each
/// from the parent's pid), so an iolab child reads this
/// ([`parent_death`]) to take those repeats as one stop request, never
/// as the "second signal" that ends it without cleaning up.
pub const PARENT_DEATH_ENV: &str = "IOLAB_PARENT_DEATH";

/// Makes the child `cmd` starts receive `signal` when this process dies,
/// however it dies (kill -9 included): a child whose parent dies is
/// otherwise adopted by init and runs on. The kernel ties this to the
/// thread that starts the child, so start it from a thread that lives as
/// long as the child should. A child whose parent died between fork and
/// the request exits at once (status 1). The child's environment gets
/// [`PARENT_DEATH_ENV`]; a command that is not iolab ignores it, and the
/// signal's default action ends it as before.
pub fn end_with_parent(cmd: &mut std::process::Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe and is read before the fork.
    let parent = unsafe { libc::getpid() };
    cmd.env(PARENT_DEATH_ENV, format!("{parent}:{signal}"));
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit); it allocates
    // nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the prctl: nobody will send the signal.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// The parent and signal [`end_with_parent`] set up for this process
/// (from [`PARENT_DEATH_ENV`]), when that parent is still this process's
/// parent: a value inherited through a process that did not set it anew
/// names someone else's parent and is ignored. Read it at start-up,
/// before the parent can have died.
pub fn parent_death() -> Option<(libc::pid_t, libc::c_int)> {
    let value = std::env::var(PARENT_DEATH_ENV).ok()?;
    let (pid, signal) = parse_parent_death(&value)?;
    // SAFETY: getppid has no preconditions and cannot fail.
    let parent = unsafe { libc::getppid() };
    (pid == parent).then_some((pid, signal))
}

/// `PID:SIGNAL` as [`end_with_parent`] writes it.
fn parse_parent_death(value: &str) -> Option<(libc::pid_t, libc::c_int)> {
    let (pid, signal) = value.split_once(':')?;
    let pid: libc::pid_t = pid.parse().ok().filter(|p| *p > 1)?;
    let signal: libc::c_int = signal.parse().ok().filter(|s| *s > 0)?;
    Some((pid, signal))
}

/// How long a Slurm client command (squeue, scancel, scontrol) may take:
/// one waits for slurmctld, which may be slow or gone.
pub const SLURM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `program args` on this host to its end, at most `limit`: then
/// it is stopped (its process group, as every command launch starts)
/// and the error is [`WaitError::Timeout`]. For client commands whose
/// server may not answer (Slurm's, Lustre's).
pub fn run_bounded(
    program: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> Result<Finished, WaitError> {
    let argv: Vec<OsString> = std::iter::once(program)
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    Remote::spawn_local(&argv, None)?.wait(limit, || false)
}

/// Environment variable naming the remote shell when no option does.
pub const RSH_ENV: &str = "IOLAB_RSH";

/// The specification of the remote shell that runs every "host's"
/// command on this one ([`ArgStyle::Local`]); a program named `local`
/// is still reachable as `shell:local` or by its path.
pub const LOCAL: &str = "local";

/// The remote shell used when neither option nor environment names one.
/// BatchMode makes ssh fail at once instead of asking for a password
/// nobody will type.
pub const DEFAULT_RSH: &str = "ssh -o BatchMode=yes";

/// How an agent hands the command's words to the far side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgStyle {
    /// No agent: the command runs on this host, as it is; the host word
    /// only names the node (the specification `local`). For a
    /// qualification or a test on one machine, where the "hosts" are
    /// agents on loopback ports of this one.
    Local,
    /// Joined into one string for a remote shell (ssh, rsh): quote each
    /// word. The default for every agent.
    Shell,
    /// Passed on as separate words (ip netns exec, srun, docker exec):
    /// asked for with the `exec:` prefix.
    Exec,
}

/// A remote-shell command prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteShell {
    /// The agent's words, before the host name.
    pub agent: Vec<String>,
    /// How the command's words reach the far side.
    pub style: ArgStyle,
}

/// A remote-shell specification that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A word a POSIX shell cannot be given (it holds a NUL byte).
    #[error("cannot pass {word:?} through a remote shell: {why}")]
    BadWord {
        /// The word.
        word: String,
        /// Why.
        why: String,
    },
    /// Empty, or unbalanced quotes.
    #[error("remote shell {spec:?}: {why}")]
    BadSpec {
        /// What was given.
        spec: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The agent could not be started at all.
    #[error("cannot start the remote shell `{agent}` for host {host}: {source}")]
    Spawn {
        /// The agent's first word.
        agent: String,
        /// The host.
        host: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What srun says when it makes no step (Slurm 22.05's messages).
const SRUN_REFUSALS: &[&str] = &[
    "Unable to create step",
    "Unable to allocate resources",
    "Invalid node name",
    "Invalid job id",
    "Unable to confirm allocation",
    "Requested node configuration is not available",
];

impl RemoteShell {
    /// Parses an agent specification: words split like a shell would
    /// (shlex: single and double quotes, backslash), optionally prefixed
    /// with `exec:` (pass the words on as they are) or `shell:` (quote
    /// them, the default). The agent's name plays no part: a wrapper
    /// around ssh at any path is quoted for as ssh is.
    pub fn parse(spec: &str) -> Result<RemoteShell, LaunchError> {
        let bad = |why| LaunchError::BadSpec {
            spec: spec.to_string(),
            why,
        };
        if spec.trim() == LOCAL {
            return Ok(RemoteShell {
                agent: vec![LOCAL.to_string()],
                style: ArgStyle::Local,
            });
        }
        let (style, rest) = match spec.trim_start() {
            s if s.starts_with("shell:") => (ArgStyle::Shell, &s[6..]),
            s if s.starts_with("exec:") => (ArgStyle::Exec, &s[5..]),
            s => (ArgStyle::Shell, s),
        };
        let agent = shlex::split(rest).ok_or_else(|| bad("unbalanced quotes"))?;
        let first = agent.first().ok_or_else(|| bad("no command given"))?;
        // srun's semantics (one task, overlapping), not its quoting:
        // quoting follows the prefix alone.
        let agent = if first.rsplit('/').next() == Some("srun") {
            one_overlapping_task(agent)
        } else {
            agent
        };
        Ok(RemoteShell { agent, style })
    }

    /// True when what the command leaves running is killed once the
    /// command returns: a Slurm step (srun) under `proctrack/cgroup` kills
    /// its whole cgroup when it ends, detached processes included. A
    /// process meant to outlive the command must then keep it running.
    pub fn ends_what_it_started(&self) -> bool {
        let first = self.agent.first().map(String::as_str).unwrap_or_default();
        first.rsplit('/').next() == Some("srun")
    }

    /// Slurm's reason when srun refused to make the step (an unknown node,
    /// no such allocation, resources it cannot give), read from what the
    /// agent wrote on standard error: a bad command line, not a failure
    /// of the command, which never started. None for other agents and
    /// for commands that ran.
    pub fn refusal(&self, stderr: &[u8]) -> Option<String> {
        if !self.ends_what_it_started() {
            return None;
        }
        srun_refusal(stderr)
    }

    /// The agent from `option` if given, else from [`RSH_ENV`], else
    /// [`DEFAULT_RSH`].
    pub fn resolve(option: Option<&str>) -> Result<RemoteShell, LaunchError> {
        match option {
            Some(s) => RemoteShell::parse(s),
            None => match std::env::var(RSH_ENV) {
                Ok(s) if !s.trim().is_empty() => RemoteShell::parse(&s),
                _ => RemoteShell::parse(DEFAULT_RSH),
            },
        }
    }

    /// The full command line that runs `command` on `host` with the
    /// environment variables `env` set there.
    /// Fails only on a word no shell can carry (a NUL byte).
    pub fn argv(
        &self,
        host: &str,
        command: &[String],
        env: &[(String, String)],
    ) -> Result<Vec<String>, LaunchError> {
        let mut words: Vec<String> = Vec::new();
        if !env.is_empty() {
            words.push("env".into());
            words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        words.extend(command.iter().cloned());
        if self.style == ArgStyle::Local {
            return Ok(words);
        }
        let mut out = self.agent.clone();
        out.push(host.to_string());
        match self.style {
            ArgStyle::Shell => {
                for (i, w) in words.iter().enumerate() {
                    // `NAME=value` first would be an assignment, not a command.
                    let q = if i == 0 && is_assignment(w) {
                        format!("'{}'", w.replace('\'', r"'\''"))
                    } else {
                        quote(w)?
                    };
                    out.push(q);
                }
            }
            ArgStyle::Exec | ArgStyle::Local => out.extend(words),
        }
        Ok(out)
    }

    /// Starts `command` on `host` with its standard input closed. The
    /// child is in its own process group, so [`Remote`] can stop the
    /// agent and everything it started, and it is killed if this process
    /// dies first. `env` is for settings, never secrets: it is on the
    /// command line (see [`RemoteShell::spawn_with_stdin`]).
    pub fn spawn(
        &self,
        host: &str,
        command: &[String],
        env: &[(String, String)],
    ) -> Result<Remote, LaunchError> {
        self.start(host, command, env, None)
    }

    /// As [`RemoteShell::spawn`], with `input` written to the command's
    /// standard input, which then stays open until the [`Remote`] is
    /// stopped or dropped: the way to hand a secret to the far side
    /// (ssh and `ip netns exec` carry standard input; nothing shows it),
    /// and the far side's sign that its starter is gone when it closes.
    pub fn spawn_with_stdin(
        &self,
        host: &str,
        command: &[String],
        env: &[(String, String)],
        input: &[u8],
    ) -> Result<Remote, LaunchError> {
        self.start(host, command, env, Some(input))
    }

    fn start(
        &self,
        host: &str,
        command: &[String],
        env: &[(String, String)],
        input: Option<&[u8]>,
    ) -> Result<Remote, LaunchError> {
        let mut argv = self.argv(host, command, env)?;
        // A step of its own name, so that a stop can have Slurm signal
        // the step's task (srun would kill it at once).
        let step = self.ends_what_it_started().then(step_name);
        if let Some(name) = &step {
            argv.insert(1, format!("--job-name={name}"));
        }
        let os: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let mut r = Remote::spawn(&os, input).map_err(|source| LaunchError::Spawn {
            agent: self.agent[0].clone(),
            host: host.to_string(),
            source,
        })?;
        r.slurm_step = step;
        Ok(r)
    }
}

/// True when a shell would take `w`, as a command's first word, for a
/// variable assignment (`NAME=...`).
fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// srun as a remote shell runs one task that shares the allocation's
/// CPUs: inside `salloc -n 2` a step inherits `SLURM_NTASKS=2` (two
/// copies of the command) and steps do not share CPUs (the second waits
/// for the first, which waits for it). So `-n1` and `--overlap` go right
/// after `srun` unless the agent says otherwise (`-n`/`--ntasks`, or
/// `--overlap` already there); after the program word, because the
/// agent's last word is usually `-w`, whose value is the host.
fn one_overlapping_task(mut agent: Vec<String>) -> Vec<String> {
    let has = |short: &str, long: &str| {
        agent
            .iter()
            .any(|w| w.starts_with(short) || w == long || w.starts_with(&format!("{long}=")))
    };
    let mut add = Vec::new();
    if !has("-n", "--ntasks") {
        add.push("-n1".to_string());
    }
    if !agent.iter().any(|w| w == "--overlap") {
        add.push("--overlap".to_string());
    }
    agent.splice(1..1, add);
    agent
}

/// Slurm's reason when srun made no step (an unknown node, no such
/// allocation, resources it cannot give), from what srun wrote on
/// standard error; None when it made one (the command ran, whatever its
/// exit status).
pub fn srun_refusal(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("srun: error:") && SRUN_REFUSALS.iter().any(|r| l.contains(r)))
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// A name no other step of this process has.
fn step_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "iolab-rsh-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The prefix of a [`plain_word`].
const PLAIN_PREFIX: &str = "hex:";

/// `text` as a word that needs no quoting (`hex:` and its bytes in hex),
/// for a value that would (JSON, a path with spaces): it reaches the far
/// side unchanged whether the agent hands the words to a shell (ssh) or
/// execs them (`ip netns exec` given without `exec:`), where a quoted
/// word would arrive with its quotes. [`from_plain_word`] reads it back.
pub fn plain_word(text: &str) -> String {
    let mut w = String::with_capacity(PLAIN_PREFIX.len() + 2 * text.len());
    w.push_str(PLAIN_PREFIX);
    for b in text.bytes() {
        w.push_str(&format!("{b:02x}"));
    }
    w
}

/// The text a [`plain_word`] holds; None when `word` is not one.
pub fn from_plain_word(word: &str) -> Option<String> {
    let hex = word.strip_prefix(PLAIN_PREFIX)?.as_bytes();
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = hex
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// Quotes `w` for a POSIX shell: untouched when every character is one
/// no POSIX shell treats specially (letters, digits, `-_./:@%+,=`), else
/// quoted by shlex so that the shell gives back exactly `w`. Leaving the
/// plain words alone keeps host:port,N lists and paths readable in `ps`
/// and lets an exec-style agent given without `exec:` work for them. A
/// NUL byte cannot be passed and is an error.
pub fn quote(w: &str) -> Result<String, LaunchError> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+,=".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        return Ok(w.to_string());
    }
    shlex::try_quote(w)
        .map(|q| q.into_owned())
        .map_err(|e| LaunchError::BadWord {
            word: w.to_string(),
            why: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_words_split_like_a_shell() {
        let r = RemoteShell::parse(r#"ssh -o "ProxyJump gw" -i '/k ey' a\ b"#).unwrap();
        assert_eq!(r.agent, ["ssh", "-o", "ProxyJump gw", "-i", "/k ey", "a b"]);
        assert!(RemoteShell::parse("ssh 'oops").is_err());
        assert!(RemoteShell::parse("   ").is_err());
    }

    #[test]
    fn style_follows_the_agent_or_the_prefix() {
        assert_eq!(
            RemoteShell::parse("/usr/bin/ssh").unwrap().style,
            ArgStyle::Shell
        );
        // One rule: the name does not decide, the prefix does.
        assert_eq!(
            RemoteShell::parse("/opt/bin/my-ssh-wrapper").unwrap().style,
            ArgStyle::Shell
        );
        assert_eq!(
            RemoteShell::parse("ip netns exec").unwrap().style,
            ArgStyle::Shell
        );
        assert_eq!(
            RemoteShell::parse("exec:ip netns exec").unwrap().style,
            ArgStyle::Exec
        );
        assert_eq!(
            RemoteShell::parse("shell:mysh").unwrap().style,
            ArgStyle::Shell
        );
        let e = RemoteShell::parse("exec:ssh").unwrap();
        assert_eq!((e.style, e.agent[0].as_str()), (ArgStyle::Exec, "ssh"));
    }

    #[test]
    fn srun_gets_one_overlapping_task_unless_it_says_otherwise() {
        let r = RemoteShell::parse("srun -N1 -w").unwrap();
        assert_eq!(r.agent, ["srun", "-n1", "--overlap", "-N1", "-w"]);
        assert_eq!(
            r.argv("node1", &["iolab".into()], &[]).unwrap(),
            ["srun", "-n1", "--overlap", "-N1", "-w", "node1", "iolab"]
        );
        let r = RemoteShell::parse("/usr/bin/srun -N1 -n1 --overlap -w").unwrap();
        assert_eq!(r.agent, ["/usr/bin/srun", "-N1", "-n1", "--overlap", "-w"]);
        let r = RemoteShell::parse("srun --ntasks=2 -w").unwrap();
        assert_eq!(r.agent, ["srun", "--overlap", "--ntasks=2", "-w"]);
        let r = RemoteShell::parse("ip netns exec").unwrap();
        assert_eq!(r.agent, ["ip", "netns", "exec"]);
    }

    #[test]
    fn srun_refusals_are_told_from_failures_of_the_command() {
        let r = RemoteShell::parse("srun -N1 -w").unwrap();
        let said = b"srun: error: Unable to create step for job 5: Requested node configuration is not available\n";
        assert!(r.refusal(said).unwrap().contains("Unable to create step"));
        let ran = b"srun: error: vm: task 0: Exited with exit code 1\n";
        assert_eq!(r.refusal(ran), None);
        let ssh = RemoteShell::parse("ssh").unwrap();
        assert_eq!(ssh.refusal(said), None);
    }

    #[test]
    fn a_plain_word_needs_no_quoting_and_reads_back() {
        let spec = r#"{"tmp":"/a b/$x","list":["n'1"]}"#;
        let w = plain_word(spec);
        assert_eq!(quote(&w).unwrap(), w, "no quoting needed");
        assert_eq!(from_plain_word(&w).as_deref(), Some(spec));
        for not in ["{}", "hex:7", "hex:zz", "hex:ff"] {
            assert_eq!(from_plain_word(not), None, "{not}");
        }
    }

    #[test]
    fn quoting_survives_any_byte_a_shell_treats_specially() {
        for w in [
            "plain-word_1.2",
            "",
            "it's $HOME",
            "a=b c",
            "{a,b}",
            "~x",
            "a\"b`c`\\d",
            "*?[x]\n~",
        ] {
            let q = quote(w).unwrap();
            assert_eq!(shlex::split(&q).unwrap(), [w], "{q}");
        }
        assert_eq!(quote("plain-word_1.2").unwrap(), "plain-word_1.2");
        assert_eq!(quote("10.0.0.2:40010,8").unwrap(), "10.0.0.2:40010,8");
        assert!(quote("a\0b").is_err());
    }

    #[test]
    fn local_runs_the_command_here_as_it_is() {
        let r = RemoteShell::parse(" local ").unwrap();
        assert_eq!(r.style, ArgStyle::Local);
        let a = r
            .argv(
                "client",
                &["iolab".into(), "a b".into()],
                &[("K".into(), "v".into())],
            )
            .unwrap();
        assert_eq!(a, ["env", "K=v", "iolab", "a b"]);
        assert!(!r.ends_what_it_started());
        assert_eq!(
            RemoteShell::parse("shell:local").unwrap().style,
            ArgStyle::Shell
        );
    }

    #[test]
    fn a_first_word_that_looks_like_an_assignment_is_quoted() {
        let r = RemoteShell::parse("ssh").unwrap();
        let a = r.argv("h", &["A=1".into(), "B=2".into()], &[]).unwrap();
        assert_eq!(a, ["ssh", "h", "'A=1'", "B=2"]);
    }

    #[test]
    fn environment_goes_through_env() {
        let r = RemoteShell::parse("exec:ip netns exec").unwrap();
        let a = r
            .argv(
                "h",
                &["iolab".into()],
                &[("IOLAB_KEY_FILE".into(), "/k".into())],
            )
            .unwrap();
        assert_eq!(
            a,
            [
                "ip",
                "netns",
                "exec",
                "h",
                "env",
                "IOLAB_KEY_FILE=/k",
                "iolab"
            ]
        );
    }

    /// The kernel signals the child when the thread that started it
    /// ends, as it does when the whole parent dies (kill -9 included):
    /// a thread of this test starts `sleep 30` and ends.
    #[test]
    fn a_child_ends_when_the_thread_that_started_it_does() {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        crate::end_with_parent(&mut cmd, libc::SIGTERM);
        let pid = std::thread::spawn(move || cmd.spawn().unwrap().id())
            .join()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let gone = loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for this process to reap it.
            if stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z") {
                break true;
            }
            if std::time::Instant::now() > until {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // Reap it (or end it, should the test fail).
        // SAFETY: kill and waitpid on a pid this process started.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
        assert!(gone, "the child outlived the thread that started it");
    }

    /// The child learns who its parent is and which signal its death
    /// sends; anything else in the variable is ignored.
    #[test]
    fn the_parent_death_variable_names_pid_and_signal() {
        let mut cmd = std::process::Command::new("true");
        crate::end_with_parent(&mut cmd, libc::SIGTERM);
        let set = cmd
            .get_envs()
            .find(|(k, _)| *k == PARENT_DEATH_ENV)
            .and_then(|(_, v)| v?.to_str());
        let want = format!("{}:{}", std::process::id(), libc::SIGTERM);
        assert_eq!(set, Some(want.as_str()));
        assert_eq!(
            parse_parent_death(&want),
            Some((std::process::id() as libc::pid_t, libc::SIGTERM))
        );
        for bad in ["", "12", "12:", ":15", "1:15", "x:15", "12:0", "12:-1"] {
            assert_eq!(parse_parent_death(bad), None, "{bad:?}");
        }
    }
}
