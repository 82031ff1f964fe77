//! The host forms a cluster's plan may give its clients in: a list, an
//! MPI hostfile, or Slurm's allocation; and the launcher each implies
//! (one rank per node, the tasks as its threads).

use crate::QualifyError;
use std::path::Path;

/// A host name as the tools pass it on: no spaces, no shell or option
/// syntax, so it means the same in every command line it lands in.
pub fn check_name(h: &str) -> Result<(), QualifyError> {
    let ok = !h.is_empty()
        && !h.starts_with('-')
        && h.len() <= 255
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:@[]".contains(c));
    match ok {
        true => Ok(()),
        false => Err(QualifyError::HostName(h.to_string())),
    }
}

/// The hosts of an MPI hostfile (Open MPI's: one host per line,
/// optionally `slots=N`; `#` starts a comment), in order, once each.
pub fn parse_hostfile(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(h) = line.split_whitespace().next() {
            if !out.iter().any(|o| o == h) {
                out.push(h.to_string());
            }
        }
    }
    out
}

/// The hosts of the hostfile at `path`.
pub fn read_hostfile(path: &Path) -> Result<Vec<String>, QualifyError> {
    let text = iolab_core::input::read_text(path, iolab_core::input::TEXT_MAX_BYTES).map_err(
        |source| QualifyError::Hostfile {
            path: path.to_path_buf(),
            source,
        },
    )?;
    let hosts = parse_hostfile(&text);
    match hosts.is_empty() {
        true => Err(QualifyError::NoHosts {
            path: path.to_path_buf(),
        }),
        false => Ok(hosts),
    }
}

/// The nodes of the Slurm allocation this runs in
/// (`scontrol show hostnames $SLURM_JOB_NODELIST`).
pub fn slurm_nodes() -> Result<Vec<String>, QualifyError> {
    let list = std::env::var("SLURM_JOB_NODELIST").map_err(|_| QualifyError::NoAllocation)?;
    // slurmctld may be slow or gone: the call is bounded.
    let out = iolab_launch::run_bounded(
        "scontrol",
        &["show", "hostnames", &list],
        iolab_launch::SLURM_TIMEOUT,
    )
    .map_err(|e| {
        QualifyError::Scontrol(match e {
            iolab_launch::WaitError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::TimedOut, other.to_string()),
        })
    })?;
    if !out.status.success() {
        return Err(QualifyError::ScontrolFailed {
            list,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    match nodes.is_empty() {
        true => Err(QualifyError::NoNodes(list)),
        false => Ok(nodes),
    }
}

/// The launcher of `{nodes}` ranks, one per client node: srun inside a
/// Slurm allocation, else mpirun over the hostfile or the client list
/// (through `rsh` as Open MPI's remote shell when the plan names one).
pub fn default_launcher(
    clients: &[String],
    hostfile: Option<&Path>,
    slurm: bool,
    rsh: Option<&str>,
) -> String {
    if slurm {
        return "srun -N {nodes} --ntasks-per-node=1 --mpi=pmix {iolab}".to_string();
    }
    let hosts = match hostfile {
        Some(f) => format!("--hostfile {}", f.display()),
        None => format!("--host {}", clients.join(",")),
    };
    let agent = match rsh.map(mpi_agent) {
        Some(Some(a)) => format!(" --mca plm_rsh_agent {a}"),
        _ => String::new(),
    };
    format!("mpirun {hosts} --map-by node{agent} -n {{nodes}} {{iolab}}")
}

/// Open MPI's `plm_rsh_agent` for a remote shell as iolab writes it:
/// the command without iolab's `exec:`/`shell:` prefix; none for
/// `local`, or for an agent of several words (the launcher's words are
/// split on spaces, so give such a launcher in full).
fn mpi_agent(rsh: &str) -> Option<String> {
    let bare = rsh
        .trim()
        .trim_start_matches("exec:")
        .trim_start_matches("shell:")
        .trim();
    match bare {
        "" | "local" => None,
        b if b.contains(char::is_whitespace) => None,
        b => Some(b.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostfiles_read_as_open_mpi_writes_them() {
        let h = parse_hostfile("# nodes\nc1 slots=4\n\nc2   # second\nc1 slots=2\n");
        assert_eq!(h, ["c1", "c2"]);
    }

    #[test]
    fn names_that_would_change_a_command_line_are_refused() {
        for bad in ["", "-x", "a b", "a;b", "$(x)"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        for good in ["c1", "10.0.0.2", "node-1.cluster", "c@10.0.0.2:7819"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn launchers_follow_the_host_form() {
        let c = ["c1".to_string(), "c2".to_string()];
        assert_eq!(
            default_launcher(&c, None, false, Some("/t/rsh")),
            "mpirun --host c1,c2 --map-by node --mca plm_rsh_agent /t/rsh -n {nodes} {iolab}"
        );
        assert!(default_launcher(&c, Some(Path::new("/h")), false, None)
            .starts_with("mpirun --hostfile /h "));
        assert!(default_launcher(&c, None, true, None).starts_with("srun"));
        assert!(
            !default_launcher(&c, None, false, Some("exec:ip netns exec"))
                .contains("plm_rsh_agent")
        );
    }
}
