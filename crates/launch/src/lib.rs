//! Starting iolab on other hosts, for the tools that span hosts (XDD's
//! end-to-end copy and `xddcp`, the network self-test, the surveys).
//!
//! The remote shell is a command prefix, as Open MPI's `plm_rsh_agent`:
//! the program is run as `AGENT... HOST COMMAND...`. It comes from an
//! option, else from [`RSH_ENV`], else it is `ssh -o BatchMode=yes`. So
//! `IOLAB_RSH="ip netns exec"` runs "hosts" that are network namespaces,
//! and `IOLAB_RSH="srun -N1 -w"` runs them through Slurm (as one task
//! sharing the allocation's CPUs: `-n1 --overlap` are added).
//!
//! Agents differ in how they pass the command. ssh, rsh and their kin
//! join the words with spaces and hand the string to a shell on the far
//! side, so each word must be shell-quoted; `ip netns exec`, `srun` or
//! `docker exec` pass the words on as they are. [`RemoteShell`] quotes
//! only for the first kind ([`ArgStyle`]), decided from the agent's name
//! or forced with a `shell:` / `exec:` prefix.
//!
//! ```
//! use iolab_launch::{ArgStyle, RemoteShell};
//! let ssh = RemoteShell::parse("ssh -p 2222").unwrap();
//! assert_eq!(ssh.style, ArgStyle::Shell);
//! let argv = ssh.argv("node7", &["iolab".into(), "xdd".into(), "-target".into(), "a b".into()], &[]);
//! assert_eq!(argv, ["ssh", "-p", "2222", "node7", "iolab", "xdd", "-target", "'a b'"]);
//! let ns = RemoteShell::parse("ip netns exec").unwrap();
//! assert_eq!(ns.argv("h1", &["iolab".into(), "a b".into()], &[]), ["ip", "netns", "exec", "h1", "iolab", "a b"]);
//! ```

mod remote;

pub use remote::{Finished, Remote, WaitError, STEP_GRACE};

use std::ffi::OsString;

/// Environment variable naming the remote shell when no option does.
pub const RSH_ENV: &str = "IOLAB_RSH";

/// The remote shell used when neither option nor environment names one.
/// BatchMode makes ssh fail at once instead of asking for a password
/// nobody will type.
pub const DEFAULT_RSH: &str = "ssh -o BatchMode=yes";

/// How an agent hands the command's words to the far side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgStyle {
    /// Joined into one string for a remote shell (ssh, rsh): quote each word.
    Shell,
    /// Passed on as separate words (ip netns exec, srun, docker exec).
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

/// Agents that hand a joined string to a remote shell.
const SHELL_AGENTS: &[&str] = &["ssh", "rsh", "oarsh", "qrsh", "blaunch", "dbclient"];

impl RemoteShell {
    /// Parses an agent specification: words split like a shell would
    /// (single and double quotes, backslash), optionally prefixed with
    /// `shell:` or `exec:` to force the [`ArgStyle`].
    pub fn parse(spec: &str) -> Result<RemoteShell, LaunchError> {
        let bad = |why| LaunchError::BadSpec {
            spec: spec.to_string(),
            why,
        };
        let (forced, rest) = match spec.trim_start() {
            s if s.starts_with("shell:") => (Some(ArgStyle::Shell), &s[6..]),
            s if s.starts_with("exec:") => (Some(ArgStyle::Exec), &s[5..]),
            s => (None, s),
        };
        let agent = split_words(rest).ok_or_else(|| bad("unbalanced quotes"))?;
        let first = agent.first().ok_or_else(|| bad("no command given"))?;
        let name = first.rsplit('/').next().unwrap_or(first);
        let style = forced.unwrap_or(if SHELL_AGENTS.contains(&name) {
            ArgStyle::Shell
        } else {
            ArgStyle::Exec
        });
        let agent = match name {
            "srun" => one_overlapping_task(agent),
            _ => agent,
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
    pub fn argv(&self, host: &str, command: &[String], env: &[(String, String)]) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        if !env.is_empty() {
            words.push("env".into());
            words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        words.extend(command.iter().cloned());
        let mut out = self.agent.clone();
        out.push(host.to_string());
        match self.style {
            ArgStyle::Shell => out.extend(words.iter().map(|w| quote(w))),
            ArgStyle::Exec => out.extend(words),
        }
        out
    }

    /// Starts `command` on `host`. The child is in its own process group,
    /// so [`Remote`] can stop the agent and everything it started.
    pub fn spawn(
        &self,
        host: &str,
        command: &[String],
        env: &[(String, String)],
    ) -> Result<Remote, LaunchError> {
        let mut argv = self.argv(host, command, env);
        // A step of its own name, so that a stop can have Slurm signal
        // the step's task (srun would kill it at once).
        let step = self.ends_what_it_started().then(step_name);
        if let Some(name) = &step {
            argv.insert(1, format!("--job-name={name}"));
        }
        let os: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let mut r = Remote::spawn(&os).map_err(|source| LaunchError::Spawn {
            agent: self.agent[0].clone(),
            host: host.to_string(),
            source,
        })?;
        r.slurm_step = step;
        Ok(r)
    }
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

/// Quotes `w` for a POSIX shell: untouched when it has only safe
/// characters, else in single quotes with `'` written as `'\''`.
pub fn quote(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', r"'\''"))
}

/// Splits a specification into words as a shell would (quotes and
/// backslashes, no expansions); None on an unbalanced quote.
fn split_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        x => cur.push(x),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => cur.push(chars.next()?),
                        x => cur.push(x),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
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
        assert_eq!(
            RemoteShell::parse("ip netns exec").unwrap().style,
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
            r.argv("node1", &["iolab".into()], &[]),
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
    fn quoting_survives_any_byte_a_shell_treats_specially() {
        assert_eq!(quote("plain-word_1.2"), "plain-word_1.2");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("it's $HOME"), r"'it'\''s $HOME'");
    }

    #[test]
    fn environment_goes_through_env() {
        let r = RemoteShell::parse("ip netns exec").unwrap();
        let a = r.argv(
            "h",
            &["iolab".into()],
            &[("IOLAB_KEY_FILE".into(), "/k".into())],
        );
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
}
