//! What the defaults of a plan depend on, looked up once: the cores,
//! the temporary directory, two free loopback ports for the local
//! network layer, a fresh token naming this qualification's files, and
//! the remote shell the environment names.

use std::path::PathBuf;

/// The facts the plan's defaults are filled from.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Cores this process may use (the tasks' cap).
    pub cores: u32,
    /// The temporary directory (`TMPDIR`, else /tmp), made absolute
    /// against the working directory.
    pub tmp: PathBuf,
    /// Two free loopback ports: the local client's and server's agents.
    pub ports: (u16, u16),
    /// A fresh random token (letters and digits).
    pub token: String,
    /// The remote shell: `IOLAB_RSH`, else ssh.
    pub rsh: String,
}

impl Machine {
    /// A machine of `cores` cores for unit tests: /tmp, ports 20001 and
    /// 20002, token t0, ssh.
    #[cfg(test)]
    pub(crate) fn sample(cores: u32) -> Machine {
        Machine {
            cores,
            tmp: "/tmp".into(),
            ports: (20001, 20002),
            token: "t0".into(),
            rsh: "ssh".into(),
        }
    }

    /// Looks the facts up.
    pub fn probe() -> std::io::Result<Machine> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        Ok(Machine {
            cores,
            // A relative TMPDIR would be written to plan.toml as it is,
            // which a rerun refuses (dir must be absolute) and which
            // names another directory from another working directory.
            tmp: std::path::absolute(std::env::temp_dir())?,
            ports: free_ports()?,
            token: token()?,
            rsh: std::env::var("IOLAB_RSH")
                .ok()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "ssh -o BatchMode=yes".to_string()),
        })
    }
}

/// Two ports nothing listens on now, below the range outgoing
/// connections take their source ports from (`iolab_core::ports`), so
/// that none takes one before the agents bind them.
fn free_ports() -> std::io::Result<(u16, u16)> {
    let base = iolab_core::ports::free_loopback_run(2)?;
    Ok((base, base + 1))
}

/// Ten random letters and digits from the OS's random source.
fn token() -> std::io::Result<String> {
    const ABC: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 10];
    getrandom::getrandom(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes
        .iter()
        .map(|b| ABC[*b as usize % ABC.len()] as char)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_gives_usable_facts() {
        let m = Machine::probe().unwrap();
        assert!(m.cores >= 1);
        assert_ne!(m.ports.0, m.ports.1);
        assert_eq!(m.token.len(), 10);
        assert_ne!(m.token, Machine::probe().unwrap().token);
    }
}
