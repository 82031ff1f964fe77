//! The docs' examples are tests: every ```` ```console ```` block of
//! README.md and docs/*.md (read from the files themselves) is run, each
//! command through bash, and its exit status and the output the doc shows
//! (figures elided as `...`) are checked. The syntax is in
//! tests/docs/markdown.rs.
//!
//! A runner of our own rather than trycmd: the examples are shell lines
//! (`size=1024 iolab survey ...`, `$(iolab gettime ...)`, `export`,
//! `mpirun ... iolab`), and their placeholders must be mapped to what the
//! suite starts, which trycmd (argv only, no shell, fixed redactions)
//! cannot do.
//!
//! Placeholders, mapped for every doc the same way:
//! - `/mnt/NAME/...`, `/data/...`, `/scratch/...`, `/var/tmp`: under a
//!   scratch tmpfs of the doc (its directories made first); the commands'
//!   working directory is that scratch too, so relative outputs land there.
//! - host names (`hostA`, `hostB`, `c1`, `s1`, `n1`, `tshost`, ...):
//!   network namespaces of a FakeCluster, named in a private /etc/hosts;
//!   the remote shell (`IOLAB_RSH`) enters the host's namespace, and the
//!   commands of a block naming hosts run on `hostA`.
//! - S3: a block naming `s3://`, `-a S3`, `--s3.` or `iolab s3bench`
//!   gets the SeaweedFS fixture's `AWS_*` variables, and the buckets it
//!   names (`--s3.bucket=B`, `s3://B/`, s3bench's `--bucket B`) exist;
//!   `127.0.0.1:9000` (warp's default endpoint) stands for the fixture's
//!   in commands and output; the doc's own `export AWS_...` and
//!   `aws ... s3 mb` lines are skipped (with the reason printed) in
//!   their favour.
//! - `mpirun`: run as written (without the suite's
//!   OMPI_ALLOW_RUN_AS_ROOT, so the doc must say it); in a build without
//!   MPI those steps are skipped with the reason printed.
//! - Slurm's commands (`srun`, `scontrol`, ...): skipped with the reason
//!   printed; `--test slurm` runs docs/mpi.md's lines as written on the
//!   one-node Slurm it starts.
//!
//! Inline commands of the prose (`` `iolab report SERIES... -o DIR` ``)
//! are forms rather than lines to run: their options are checked against
//! their tool's help (tests/docs/inline.rs).
//!
//! Each doc's blocks run in order and share its scratch, its variables
//! and its working directory, so a doc may write a file in one example
//! and read it in the next.

// A failed unwrap in a test is the test failing, with its message.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "docs/inline.rs"]
mod inline;
#[path = "docs/markdown.rs"]
mod markdown;

use common::*;
use markdown::{console_blocks, output_matches, Block, Step};
use std::collections::{BTreeSet, HashMap};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a single example command may run.
const STEP_TIMEOUT: Duration = Duration::from_secs(150);

/// Names the docs use for other hosts; the first is the console's host.
const HOSTS: &[&str] = &[
    "hostA", "hostB", "hostC", "tshost", "host1", "host2", "c1", "c2", "c3", "c4", "s1", "s2",
    "n1", "n2", "n3", "mds1", "oss1", "oss2",
];

/// Path prefixes that stand for the file system under test, and
/// `/var/tmp` (stats.md's collectors' TMP: each doc run its own).
const PATH_ROOTS: &[&str] = &["/mnt/", "/data/", "/scratch/", "/var/tmp/"];

/// The root a path starts with: `/mnt/x`, or the root alone (`/var/tmp`).
fn path_root(s: &str) -> Option<&'static str> {
    PATH_ROOTS.iter().copied().find(|r| {
        s.starts_with(r)
            || s.strip_prefix(r.trim_end_matches('/')).is_some_and(|rest| {
                rest.is_empty()
                    || rest.starts_with(|c: char| c.is_whitespace() || "'\";,)".contains(c))
            })
    })
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every docs/*.md, sorted.
fn doc_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(workspace().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    v.sort();
    v.insert(0, workspace().join("README.md"));
    v
}

/// The running context of one doc: scratch, shell state, hosts.
struct DocRun {
    name: String,
    scratch: Scratch,
    state: PathBuf,
    hosts: Option<Hosts>,
    s3_env: Vec<(&'static str, String)>,
    /// Process groups of the block's steps (background jobs live on in them).
    groups: std::cell::RefCell<Vec<i32>>,
    /// Every host name the doc's examples use.
    doc_hosts: BTreeSet<&'static str>,
    steps_run: std::cell::Cell<usize>,
}

/// The fake hosts of a doc: namespaces, a hosts file, a remote shell.
struct Hosts {
    cluster: iolab_testkit::FakeCluster,
    hosts_file: PathBuf,
    rsh: PathBuf,
}

impl DocRun {
    fn new(name: &str) -> DocRun {
        let scratch = Scratch::new(&format!("docs-{name}"));
        let state = scratch.path(".docs-state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join("pwd"), scratch.root.display().to_string()).unwrap();
        std::fs::write(state.join("env"), "").unwrap();
        // Examples name files of the checkout (examples/*.toml) as they
        // would be read from its root.
        std::os::unix::fs::symlink(workspace().join("examples"), scratch.path("examples")).unwrap();
        DocRun {
            name: name.to_string(),
            scratch,
            state,
            hosts: None,
            s3_env: Vec::new(),
            groups: Default::default(),
            doc_hosts: BTreeSet::new(),
            steps_run: Default::default(),
        }
    }

    /// Maps the doc's paths into the scratch (`/mnt/fs/x` -> `S/mnt/fs/x`).
    fn map_paths(&self, s: &str) -> String {
        map_paths(s, &self.scratch.root)
    }

    /// Makes the directories the mapped paths of `cmd` start in.
    fn make_roots(&self, cmd: &str) {
        for w in cmd.split(|c: char| c.is_whitespace() || "=,:'\"".contains(c)) {
            if let Some(root) = path_root(w) {
                let rest = w.get(root.len()..).unwrap_or("");
                let dir = match (root, rest.split('/').next()) {
                    ("/mnt/", Some(first)) if !first.is_empty() => format!("mnt/{first}"),
                    _ => root.trim_matches('/').to_string(),
                };
                std::fs::create_dir_all(self.scratch.root.join(dir)).unwrap();
            }
        }
    }

    /// Starts the fake hosts the doc names (once per doc).
    fn ensure_hosts(&mut self) -> Result<(), String> {
        if self.hosts.is_some() {
            return Ok(());
        }
        let mut all: Vec<&str> = vec!["hostA"];
        all.extend(self.doc_hosts.iter().filter(|n| **n != "hostA"));
        let cluster = iolab_testkit::FakeCluster::new(all.len())?;
        let mut hosts = String::from("127.0.0.1 localhost\n");
        let mut cases = String::new();
        for (i, n) in all.iter().enumerate() {
            let (ns, addr) = cluster.host(i);
            hosts.push_str(&format!("{addr} {n}\n"));
            cases.push_str(&format!("  {n}|{addr}) ns={ns} ;;\n"));
        }
        let hosts_file = self.state.join("hosts");
        std::fs::write(&hosts_file, hosts).unwrap();
        let rsh = self.state.join("rsh");
        let script = format!(
            "#!/bin/sh\n# The docs test's remote shell: HOST -> its namespace.\nh=$1; shift\ncase \"$h\" in\n{cases}  *) echo \"rsh: no test host $h\" >&2; exit 255 ;;\nesac\nexec ip netns exec \"$ns\" \"$@\"\n"
        );
        std::fs::write(&rsh, script).unwrap();
        // `ssh HOST COMMAND` in an example: the same remote shell.
        let bin = self.state.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ssh = format!(
            "#!/bin/sh\n# The docs test's ssh: ssh [OPTIONS] HOST COMMAND... on a test host.\nwhile [ $# -gt 0 ]; do case \"$1\" in -o|-p|-i|-l) shift 2 ;; -*) shift ;; *) break ;; esac; done\nh=$1; shift\nexec '{}' \"$h\" sh -c \"$*\"\n",
            rsh.display()
        );
        std::fs::write(bin.join("ssh"), ssh).unwrap();
        for f in [&rsh, &bin.join("ssh")] {
            std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        self.hosts = Some(Hosts {
            cluster,
            hosts_file,
            rsh,
        });
        Ok(())
    }

    /// Points the doc at the S3 server and makes the buckets it names.
    fn ensure_s3(&mut self, text: &str) -> Result<(), String> {
        let s = iolab_testkit::s3::S3Server::shared()?;
        for b in bucket_names(text) {
            if !s.bucket_exists(&b)? {
                s.make_bucket(&b)?;
            }
        }
        self.s3_env = s.env();
        Ok(())
    }

    /// `127.0.0.1:9000` as the S3 fixture's endpoint, in a doc that uses it.
    fn map_s3(&self, s: &str) -> String {
        let fixture = self
            .s3_env
            .iter()
            .find(|(k, _)| *k == "AWS_ENDPOINT_URL")
            .map(|(_, v)| v.trim_start_matches("http://"));
        match fixture {
            Some(f) => s.replace(DOC_S3_ENDPOINT, f),
            None => s.to_string(),
        }
    }

    /// Runs one step; the error says what differs.
    fn run_step(&self, step: &Step, on_host: bool) -> Result<(), String> {
        let cmd = self.map_s3(&self.map_paths(&step.command));
        self.make_roots(&step.command);
        let script = self.state.join("step.sh");
        std::fs::write(&script, step_script(&cmd, &self.state)).unwrap();
        let (status, out) = self.exec(&script, on_host)?;
        let want: Vec<String> = step
            .expected
            .iter()
            .map(|l| self.map_s3(&self.map_paths(l)))
            .collect();
        let shown = format!("status {status}\n{out}");
        if status != step.status {
            return Err(format!(
                "exit status {status}, the doc says {}\n{shown}",
                step.status
            ));
        }
        output_matches(&want, &out)
    }

    /// Runs a step script under bash (on hostA when asked); returns its
    /// status and its output (stdout and stderr as they were written).
    fn exec(&self, script: &Path, on_host: bool) -> Result<(i32, String), String> {
        let mut c = match (&self.hosts, on_host) {
            (Some(h), true) => {
                let (ns, _) = h.cluster.host(0);
                let mut c = Command::new("unshare");
                c.args(["-m", "--", "sh", "-c"])
                    .arg("mount --bind \"$1\" /etc/hosts && shift && exec \"$@\"")
                    .arg("sh")
                    .arg(&h.hosts_file)
                    .args(["ip", "netns", "exec", &ns, "bash"])
                    .arg(script)
                    .env("IOLAB_RSH", format!("exec:{}", h.rsh.display()));
                c
            }
            _ => {
                let mut c = Command::new("bash");
                c.arg(script);
                c
            }
        };
        let bin = Path::new(env!("CARGO_BIN_EXE_iolab")).parent().unwrap();
        let mut path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        if self.hosts.is_some() {
            // The test's ssh first.
            path = format!("{}:{path}", self.state.join("bin").display());
        }
        // A file per step: a background job of an earlier step may still
        // write to its own.
        let n = self.steps_run.get() + 1;
        self.steps_run.set(n);
        // Standard output and error in one file, in the order written,
        // as a terminal shows them.
        let out_f = self.state.join(format!("output.{n}"));
        let out = std::fs::File::create(&out_f).unwrap();
        c.env("PATH", path)
            .env_remove("OMPI_ALLOW_RUN_AS_ROOT")
            .env_remove("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
            .env_remove("IOLAB_STORE")
            .env("OMPI_MCA_orte_tmpdir_base", &self.state)
            .envs(self.s3_env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(&self.scratch.root)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0);
        let mut child = c.spawn().map_err(|e| format!("cannot start bash: {e}"))?;
        self.groups.borrow_mut().push(child.id() as i32);
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > STEP_TIMEOUT {
                // SAFETY: kill has no memory preconditions; the group is the child's own.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!("still running after {STEP_TIMEOUT:?}: killed"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = std::fs::read_to_string(&out_f).unwrap_or_default();
        Ok((status.code().unwrap_or(-1), out))
    }
}

impl DocRun {
    /// Ends what the block's steps left running (`iolab timeserver &`).
    fn end_block(&self) {
        for g in self.groups.borrow_mut().drain(..) {
            // SAFETY: kill has no memory preconditions; each group is a step's own.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
    }
}

impl Drop for DocRun {
    fn drop(&mut self) {
        self.end_block();
    }
}

/// The bash script of one step: the doc's variables and working directory
/// before, saved again after. Exported variables (not PATH and IOLAB_RSH:
/// the runner sets them for each step, the test's ssh first on the hosts'
/// steps), and the shell variables a doc sets (`g=$(iolab gettime ...)`),
/// told from bash's own by their lower-case first letter.
fn step_script(cmd: &str, state: &Path) -> String {
    let s = state.display();
    format!(
        "source '{s}/env'\ncd \"$(cat '{s}/pwd')\"\n{cmd}\n__rc=$?\n{{ export -p | grep -Ev '^declare -x (PWD|OLDPWD|SHLVL|_|PATH|IOLAB_RSH)='; declare -p | grep -E '^declare -[-aAi]+ [a-z][a-z0-9_]*='; }} > '{s}/env'\npwd > '{s}/pwd'\nexit $__rc\n"
    )
}

/// `/mnt/fs/x` -> `ROOT/mnt/fs/x` where a path starts (not inside a word).
fn map_paths(s: &str, root: &Path) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        let starts = i == 0 || b" \t\n=:,'\"(".contains(&b[i - 1]);
        if starts {
            if let Some(r) = path_root(&s[i..]) {
                let r = if s[i..].starts_with(r) {
                    r
                } else {
                    r.trim_end_matches('/')
                };
                out.push_str(&root.display().to_string());
                out.push_str(r);
                i += r.len();
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The placeholder host names a text uses (as whole words).
fn host_names(text: &str) -> BTreeSet<&'static str> {
    let words: BTreeSet<&str> = text
        .split(|c: char| c.is_whitespace() || ",=:@'\"".contains(c))
        .collect();
    HOSTS
        .iter()
        .copied()
        .filter(|h| words.contains(h))
        .collect()
}

/// Whether a text needs the S3 server.
fn uses_s3(text: &str) -> bool {
    text.contains("s3://")
        || text.contains("-a S3")
        || text.contains("--s3.")
        || text.contains("iolab s3bench")
}

/// The endpoint the docs write for an S3 service (warp's default).
const DOC_S3_ENDPOINT: &str = "127.0.0.1:9000";

/// Buckets a text names: `--s3.bucket=B`, `s3://B/...`, and s3bench's
/// `--bucket B` or `--bucket=B`.
fn bucket_names(text: &str) -> BTreeSet<String> {
    let mut v = BTreeSet::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    let s3bench = text.contains("s3bench");
    for (i, w) in words.iter().enumerate() {
        let name = w.strip_prefix("--s3.bucket=").or_else(|| {
            w.strip_prefix("s3://")
                .map(|r| r.split('/').next().unwrap_or(""))
        });
        let name = name.or(match (s3bench, *w) {
            (true, "--bucket") => words.get(i + 1).copied(),
            (true, _) => w.strip_prefix("--bucket="),
            _ => None,
        });
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            v.insert(n.to_string());
        }
    }
    v
}

/// Slurm's commands: a doc's lines with them run in `--test slurm`, on
/// the one-node Slurm it starts (crates/testkit/src/slurm.rs).
const SLURM: &[&str] = &["srun", "salloc", "sbatch", "scontrol", "squeue", "scancel"];

/// Why a step cannot run here, if it cannot.
fn cannot_run(step: &Step) -> Option<&'static str> {
    if !cfg!(feature = "mpi") && step.command.contains("mpirun") {
        return Some("mpirun example: this build has no MPI (run with --features iolab/mpi)");
    }
    let first = step.command.split_whitespace().next().unwrap_or("");
    // `export AWS_ENDPOINT_URL=... AWS_ACCESS_KEY_ID=...`: the S3 server's
    // variables are the fixture's (DocRun::ensure_s3).
    if first == "export" && step.command.contains("AWS_") {
        return Some("S3 settings: the docs test's SeaweedFS variables are set instead");
    }
    // `aws ... s3 mb s3://B`: the buckets a doc names are made by ensure_s3.
    if first == "aws" {
        return Some("AWS CLI: the docs test makes the buckets the doc names on its SeaweedFS");
    }
    if SLURM.contains(&first) {
        return Some("Slurm example: run as written by `--test slurm` on its one-node Slurm");
    }
    None
}

/// Runs every block of one doc text; returns the failures.
fn run_doc(name: &str, text: &str) -> Vec<String> {
    let blocks = console_blocks(text);
    if blocks.is_empty() {
        return Vec::new();
    }
    let mut run = DocRun::new(name);
    // The fake hosts are made once per doc, for every host it names.
    let commands: Vec<&str> = blocks
        .iter()
        .flat_map(|b| b.steps.iter().map(|s| s.command.as_str()))
        .collect();
    run.doc_hosts = host_names(&commands.join("\n"));
    let mut failures = Vec::new();
    for b in &blocks {
        let r = run_block(&mut run, b);
        run.end_block();
        if let Err(e) = r {
            failures.push(e);
        }
    }
    failures
}

/// Held by a block that uses the shared S3 server (see [`run_block`]).
static S3_BLOCKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_block(run: &mut DocRun, b: &Block) -> Result<(), String> {
    let all: String = b
        .steps
        .iter()
        .map(|s| s.command.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let names = host_names(&all);
    if !names.is_empty() {
        run.ensure_hosts()
            .map_err(|e| format!("{}:{}: cannot make the test hosts: {e}", run.name, b.line))?;
    }
    // The docs share one S3 server and name the same buckets and prefixes
    // (README.md and s3.md both write `runs` under `/run1`), so one block
    // that uses S3 runs at a time; each removes what it made.
    let _s3_turn = if uses_s3(&all) {
        let turn = S3_BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        run.ensure_s3(&all)
            .map_err(|e| format!("{}:{}: no S3 server: {e}", run.name, b.line))?;
        Some(turn)
    } else {
        None
    };
    for s in &b.steps {
        if let Some(why) = cannot_run(s) {
            println!("{}:{}: not run here: {why}", run.name, s.line);
            continue;
        }
        let t0 = Instant::now();
        run.run_step(s, !names.is_empty())
            .map_err(|e| format!("{}:{}: `{}`: {e}", run.name, s.line, s.command))?;
        // The slow steps, for whoever shortens the suite (--nocapture).
        let took = t0.elapsed().as_secs_f64();
        if took >= 1.0 {
            println!("{}:{}: {took:.1} s", run.name, s.line);
        }
    }
    Ok(())
}

#[test]
fn every_console_example_of_the_docs_runs_as_documented() {
    if !is_root() {
        skip_or_fail("docs", "the examples need root (mounts, namespaces)");
        return;
    }
    // IOLAB_DOCS=xdd.md,lst.md runs only those (while editing a doc).
    let only = std::env::var("IOLAB_DOCS").unwrap_or_default();
    let files: Vec<PathBuf> = doc_files()
        .into_iter()
        .filter(|f| only.is_empty() || only.split(',').any(|o| f.ends_with(o)))
        .collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| {
                s.spawn(move || {
                    let name = f.file_name().unwrap().to_string_lossy().into_owned();
                    let text = std::fs::read_to_string(f).unwrap();
                    let t0 = Instant::now();
                    let r = run_doc(&name, &text);
                    println!("{name}: {:.1} s", t0.elapsed().as_secs_f64());
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} example(s) do not do what the docs say:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The runner itself: an example given an option its tool does not have
/// fails the docs test (status and message differ from the doc's).
#[test]
fn an_example_with_an_unknown_option_fails() {
    let good = "```console\n$ iolab mdtest -d /mnt/fs/x -n 4 -F\n...\n```\n";
    assert_eq!(run_doc("runner-good", good), Vec::<String>::new());
    let bad = "```console\n$ iolab mdtest -d /mnt/fs/x -n 4 -F --no-such-option\n...\n```\n";
    let f = run_doc("runner-bad", bad);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("exit status 2"), "{f:?}");
}

/// README.md and every doc: every iolab command line in them is in a
/// console block (or says why not), so an unknown option given to any of
/// them fails the docs test; each is tried with one (the command must
/// name it).
#[test]
fn an_unknown_option_in_any_doc_example_fails() {
    if !is_root() {
        skip_or_fail("docs", "the examples need root (mounts, namespaces)");
        return;
    }
    let mut weak = Vec::new();
    let mut tried = 0;
    for path in doc_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let f = path
            .strip_prefix(workspace())
            .unwrap_or(&path)
            .display()
            .to_string();
        let blocks = console_blocks(&text);
        // The doc's own context (hosts, files its other commands make),
        // each iolab command given the unknown option, the rest as written.
        let mut run = DocRun::new(&format!("mutants-{}", f.replace('/', "-")));
        let commands: Vec<&str> = blocks
            .iter()
            .flat_map(|b| b.steps.iter().map(|s| s.command.as_str()))
            .collect();
        run.doc_hosts = host_names(&commands.join("\n"));
        for b in &blocks {
            let on_host = b.steps.iter().any(|s| !host_names(&s.command).is_empty());
            if on_host {
                run.ensure_hosts().unwrap();
            }
            for s in b.steps.iter().filter(|s| cannot_run(s).is_none()) {
                let Some(cmd) = with_unknown_option(&s.command) else {
                    // Setup (mkdir, echo > file); a check of what an iolab
                    // command made (cmp) fails here, and that is fine.
                    let _ = run.run_step(s, on_host);
                    continue;
                };
                tried += 1;
                // Expect success and a line no command prints, so that the
                // step always fails and its output must name the unknown
                // option: also when the example exits non-zero as
                // documented, or prints nothing (`g=$(iolab gettime ...)`).
                let step = Step {
                    command: cmd,
                    status: 0,
                    expected: vec!["(this line is never printed)".into()],
                    ..s.clone()
                };
                match run.run_step(&step, on_host) {
                    Err(e) if e.contains("no-such-option") => {}
                    r => weak.push(format!("{f}:{}: `{}`: {r:?}", s.line, s.command)),
                }
            }
            run.end_block();
        }
    }
    assert!(tried > 0);
    assert!(
        weak.is_empty(),
        "examples that an unknown option does not fail:\n{}",
        weak.join("\n")
    );
}

/// The command with `--no-such-option` after its iolab subcommand (the
/// first iolab word and the word after it), or None without iolab.
fn with_unknown_option(cmd: &str) -> Option<String> {
    // In the foreground, so its status and message are the step's.
    let cmd = foreground(cmd);
    let cmd = cmd.trim_end().trim_end_matches(';').trim_end();
    let at = cmd.find("iolab ")?;
    let rest = &cmd[at + "iolab ".len()..];
    let sub_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (sub, tail) = rest.split_at(sub_end);
    // `iolab --help` and a command iolab does not have (an example of the
    // usage error) have no tool to give the option to.
    if sub.starts_with('-') || sub.starts_with("no-such") {
        return None;
    }
    Some(format!("{}iolab {sub} --no-such-option{tail}", &cmd[..at]))
}

/// Shell lines with their comments dropped and every `&` that puts a
/// command in the background made a `;` (`&&`, `>&`, `&>` stay).
fn foreground(cmd: &str) -> String {
    let b = cmd.as_bytes();
    let mut out = String::with_capacity(cmd.len());
    let mut quote: Option<char> = None;
    let mut comment = false;
    for (i, c) in cmd.char_indices() {
        if comment && c != '\n' {
            continue;
        }
        comment = false;
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if i == 0 || b[i - 1].is_ascii_whitespace() => {
                comment = true;
                continue;
            }
            (None, '&') => {
                let prev = if i > 0 { b[i - 1] } else { b' ' };
                let next = b.get(i + 1).copied().unwrap_or(b' ');
                if !b"&><".contains(&prev) && !b"&>".contains(&next) {
                    out.push(';');
                    continue;
                }
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// In README.md and every doc, a fenced block that is not a console block
/// and still holds an iolab command line must say why it is not run.
#[test]
fn iolab_lines_outside_console_blocks_say_why_they_do_not_run() {
    let mut bad = Vec::new();
    for path in doc_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let f = path.strip_prefix(workspace()).unwrap_or(&path).display();
        let mut fence: Option<(usize, String, bool)> = None;
        for (i, l) in text.lines().enumerate() {
            if let Some(tag) = l.trim_start().strip_prefix("```") {
                match fence.take() {
                    None => fence = Some((i + 1, tag.to_string(), false)),
                    Some((at, tag, iolab)) => {
                        let marked = text
                            .lines()
                            .nth(at)
                            .is_some_and(|first| first.contains("not run by the docs test"));
                        if iolab && tag != "console" && !marked {
                            bad.push(format!("{f}:{at}"));
                        }
                    }
                }
            } else if let Some((_, _, iolab)) = fence.as_mut() {
                let t = l.split(" #").next().unwrap_or("").trim_start();
                *iolab |= !t.starts_with('#') && (t.starts_with("iolab ") || t.contains(" iolab "));
            } else if l.starts_with("    iolab ") {
                bad.push(format!("{f}:{} (indented code)", i + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "iolab command lines outside console blocks, with no `not run by the docs test: WHY` first line:\n{}",
        bad.join("\n")
    );
}

#[test]
fn placeholders_map_paths_hosts_and_buckets() {
    let root = Path::new("/s");
    assert_eq!(
        map_paths("-d /mnt/fs/x --json=/data/o.json /tmp/data/", root),
        "-d /s/mnt/fs/x --json=/s/data/o.json /tmp/data/"
    );
    assert_eq!(
        map_paths("TMP=/var/tmp\nA=/var/tmp/x B=/var/tmpfs", root),
        "TMP=/s/var/tmp\nA=/s/var/tmp/x B=/var/tmpfs"
    );
    assert_eq!(
        host_names("xddcp /data/a hostB:/scratch/b --from c1,c2 --to s1 -s1"),
        ["c1", "c2", "hostB", "s1"].into_iter().collect()
    );
    assert_eq!(
        bucket_names("-a S3 --s3.bucket=runs s3://big/obj"),
        ["big".to_string(), "runs".to_string()]
            .into_iter()
            .collect()
    );
    assert_eq!(
        bucket_names("iolab s3bench get --bucket bench\niolab s3bench put --bucket=b2"),
        ["b2".to_string(), "bench".to_string()]
            .into_iter()
            .collect()
    );
    assert_eq!(
        with_unknown_option("size=1 iolab survey mds /mnt/a").unwrap(),
        "size=1 iolab survey --no-such-option mds /mnt/a"
    );
    assert_eq!(
        with_unknown_option("ssh s1 iolab lst agent &   # agents").unwrap(),
        "ssh s1 iolab lst --no-such-option agent"
    );
    assert_eq!(
        foreground("for h in a b; do x $h & done; y && z 2>&1 &>/dev/null '#&' # c &\nw &"),
        "for h in a b; do x $h ; done; y && z 2>&1 &>/dev/null '#&' \nw ;"
    );
}

/// The help texts of iolab's commands, by command words (`["xdd"]`):
/// `--help`, and `-fullhelp` where the tool has it (xdd's every option).
#[derive(Default)]
struct Helps(HashMap<Vec<String>, Option<String>>);

impl Helps {
    /// The help of `iolab PATH...`; None when it has none (no such command).
    fn of(&mut self, path: &[String]) -> Option<&str> {
        self.0
            .entry(path.to_vec())
            .or_insert_with(|| {
                let mut text = String::new();
                for flag in ["--help", "-fullhelp"] {
                    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
                        .args(path)
                        .arg(flag)
                        .stdin(Stdio::null())
                        .output()
                        .unwrap();
                    if o.status.success() {
                        text.push_str(&String::from_utf8_lossy(&o.stdout));
                        text.push_str(&String::from_utf8_lossy(&o.stderr));
                    }
                }
                (!text.is_empty()).then_some(text)
            })
            .as_deref()
    }
}

/// The inline `iolab ...` commands of a doc whose command or options the
/// tool's help does not list.
fn check_inline(name: &str, text: &str, helps: &mut Helps) -> Vec<String> {
    let mut bad = Vec::new();
    for c in inline::inline_commands(text) {
        let at = format!("{name}:{}: `{}`", c.line, c.text);
        let Some(help) = helps.of(&c.path) else {
            bad.push(format!("{at}: `iolab {} --help` fails", c.path.join(" ")));
            continue;
        };
        let unknown: Vec<&str> = c
            .options
            .iter()
            .filter(|o| !inline::help_lists(help, o))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            bad.push(format!(
                "{at}: `iolab {} --help` lists no {}",
                c.path.join(" "),
                unknown.join(", ")
            ));
        }
    }
    bad
}

/// Command lines given inline in the prose (`` `iolab survey ost -s 64
/// /mnt/lustre` ``) are not run (most are forms, with FILE and N), but
/// every option they give must be one their tool has.
#[test]
fn every_inline_iolab_command_gives_options_its_tool_has() {
    let mut helps = Helps::default();
    let mut bad = Vec::new();
    let mut checked = 0;
    for path in doc_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(workspace()).unwrap_or(&path).display();
        checked += inline::inline_commands(&text).len();
        bad.extend(check_inline(&name.to_string(), &text, &mut helps));
    }
    assert!(checked > 10, "only {checked} inline iolab commands found");
    assert!(
        bad.is_empty(),
        "inline iolab commands with options their tool does not have:\n{}",
        bad.join("\n")
    );
}

/// The inline check itself: an unknown option, or an unknown command,
/// in an inline command fails it; the same commands without pass.
#[test]
fn an_inline_command_with_an_unknown_option_fails() {
    let mut helps = Helps::default();
    let good = "Run `iolab mdtest -n 4 -F -W 5` or `iolab xdd -op read -e2e issource`, `iolab results export ID --json\\|--csv`.\n";
    assert_eq!(check_inline("good", good, &mut helps), Vec::<String>::new());
    let bad = "Run `iolab mdtest -n 4 -F --no-such-option` or\n`iolab xdd -op read -nosuchoption`, `iolab nosuchtool -x`.\n";
    let f = check_inline("bad", bad, &mut helps);
    assert_eq!(f.len(), 3, "{f:?}");
    assert!(
        f[0].starts_with("bad:1:") && f[0].ends_with("lists no --no-such-option"),
        "{f:?}"
    );
    assert!(
        f[1].starts_with("bad:2:") && f[1].ends_with("lists no -nosuchoption"),
        "{f:?}"
    );
    assert!(f[2].contains("`iolab nosuchtool --help` fails"), "{f:?}");
}

/// Every `crates/...` or `docs/...` path docs/architecture.md names in
/// code spans (each alternative of a `{a,b}` group) and every file it
/// links to exists: the page a newcomer starts from must not send them
/// to a file that moved or never was. Placeholders (`<tool>`, `*`,
/// `...`) are not paths.
#[test]
fn every_path_the_architecture_page_names_exists() {
    let text = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let named = named_paths(&text);
    assert!(
        named.len() > 40,
        "only {} paths found: {named:?}",
        named.len()
    );
    let missing: Vec<&String> = named
        .iter()
        .filter(|p| !workspace().join(p).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that do not exist:\n{}",
        missing
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn named_paths_reads_spans_groups_and_links() {
    let text = "`crates/a/x.rs` and `crates/b/{c,d}.rs` (`crates/<tool>`, \
                `docs/*.md`, `crates/...`)\n[s3](s3.md), [o](../crates/e.rs)\n\
                ```text\n`crates/in/fence.rs`\n```\n`IOLAB_DOCS=x cargo test` `docs/f.md`\n";
    assert_eq!(
        named_paths(text),
        [
            "crates/a/x.rs",
            "crates/b/c.rs",
            "crates/b/d.rs",
            "crates/e.rs",
            "docs/f.md",
            "docs/s3.md"
        ]
    );
}

/// The workspace-relative paths a doc of docs/ names: words of its code
/// spans (outside fenced blocks) that start with `crates/` or `docs/`,
/// and the targets of its relative links. Sorted, without repeats.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") && !line.trim_start()[3..].contains('`') {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in code_spans(line) {
            for w in span.split_whitespace() {
                let is_path = w.starts_with("crates/") || w.starts_with("docs/");
                if is_path && !w.contains(['<', '*']) && !w.contains("...") {
                    out.extend(alternatives(w));
                }
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            if !target.contains("://") && !target.starts_with('#') {
                let target = target.split('#').next().unwrap_or("");
                out.insert(match target.strip_prefix("../") {
                    Some(up) => up.to_string(),
                    None => format!("docs/{target}"),
                });
            }
        }
    }
    out.into_iter().collect()
}

/// The code spans of one line: text between two runs of as many backticks.
fn code_spans(line: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let run = rest[open..].len() - rest[open..].trim_start_matches('`').len();
        let body = &rest[open + run..];
        let fence = "`".repeat(run);
        let mut from = 0;
        let close = loop {
            match body[from..].find(&fence) {
                None => break None,
                Some(at) => {
                    let at = from + at;
                    let len = body[at..].len() - body[at..].trim_start_matches('`').len();
                    if len == run {
                        break Some(at);
                    }
                    from = at + len;
                }
            }
        };
        match close {
            Some(at) => {
                spans.push(&body[..at]);
                rest = &body[at + run..];
            }
            None => break,
        }
    }
    spans
}

/// `a/{b,c}.rs` -> `a/b.rs`, `a/c.rs` (one group); other words as they are.
fn alternatives(word: &str) -> Vec<String> {
    match (word.find('{'), word.find('}')) {
        (Some(l), Some(r)) if l < r => word[l + 1..r]
            .split(',')
            .map(|alt| format!("{}{alt}{}", &word[..l], &word[r + 1..]))
            .collect(),
        _ => vec![word.to_string()],
    }
}
