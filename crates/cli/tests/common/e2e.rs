//! Fixtures for the end-to-end tests: free loopback port ranges, and an
//! `iolab` running in the background (a copy's destination side) whose
//! output is collected as it comes, killed on drop.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A base port whose next `n` ports are free on 127.0.0.1 right now,
/// below Linux's ephemeral range, so that no connection's source port
/// takes one meanwhile (`iolab_core::ports`, which iolab's own local
/// agents take their ports from too).
pub fn free_ports(n: u16) -> u16 {
    iolab_core::ports::free_loopback_run(n).expect("free loopback ports")
}

/// A command running in the background with its output collected.
pub struct Bg {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
}

/// How a background command ended.
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

fn collect<R: Read + Send + 'static>(mut r: R) -> Arc<Mutex<Vec<u8>>> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            b.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    buf
}

impl Bg {
    /// Starts `iolab WORDS...` in `dir` with `env` added.
    pub fn start(dir: &Path, words: &[String], env: &[(&str, &str)]) -> Bg {
        Self::spawn(
            Command::new(env!("CARGO_BIN_EXE_iolab")).args(words),
            dir,
            env,
        )
    }

    /// Starts `argv` in `dir` (another program, such as `ip netns exec`).
    pub fn start_argv(dir: &Path, argv: &[String], env: &[(&str, &str)]) -> Bg {
        Self::spawn(Command::new(&argv[0]).args(&argv[1..]), dir, env)
    }

    /// Starts a command prepared by the caller (say, set up to end with
    /// its parent) in `dir` with `env` added.
    #[allow(dead_code)]
    pub fn start_command(cmd: &mut Command, dir: &Path, env: &[(&str, &str)]) -> Bg {
        Self::spawn(cmd, dir, env)
    }

    fn spawn(cmd: &mut Command, dir: &Path, env: &[(&str, &str)]) -> Bg {
        let mut child = cmd
            .current_dir(dir)
            .env("CI", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = collect(child.stdout.take().unwrap());
        let err = collect(child.stderr.take().unwrap());
        Bg { child, out, err }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True once it has exited (does not reap it for `wait`'s status).
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Standard error so far.
    pub fn stderr_now(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap()).into_owned()
    }

    /// Waits (at most 60 s) until standard error contains `what`, or the
    /// command has exited; true when it appeared.
    pub fn wait_for(&mut self, what: &str) -> bool {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if self.stderr_now().contains(what) {
                return true;
            }
            if self.child.try_wait().unwrap().is_some() {
                std::thread::sleep(Duration::from_millis(50));
                return self.stderr_now().contains(what);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Waits (at most `secs`) for the exit; kills it if it does not end.
    pub fn wait(mut self, secs: u64) -> Ended {
        let until = Instant::now() + Duration::from_secs(secs);
        let mut code = None;
        while Instant::now() < until {
            if let Some(s) = self.child.try_wait().unwrap() {
                code = s.code();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if code.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // The collectors end at EOF, right after the exit.
        std::thread::sleep(Duration::from_millis(50));
        Ended {
            code,
            stdout: String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned(),
            stderr: self.stderr_now(),
        }
    }

    /// SIGKILL now, and reap.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Splits a command line on spaces into owned words.
pub fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

/// A file of `bytes` random bytes (incompressible, so a copy cannot
/// look right by accident).
pub fn random_file(p: &Path, bytes: usize) {
    use std::io::Read;
    let mut v = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut v)
        .unwrap();
    std::fs::write(p, v).unwrap();
}

/// True when the two files hold the same bytes (cmp(1)).
pub fn same(a: &Path, b: &Path) -> bool {
    std::process::Command::new("cmp")
        .arg(a)
        .arg(b)
        .status()
        .unwrap()
        .success()
}
