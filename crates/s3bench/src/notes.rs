//! What a run has to tell besides its figures: why it ended early, what
//! it passed over or sent again, and what it left in the bucket.

use crate::result::{Ended, Report};

/// The notes of a finished run.
pub fn of(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    match r.ended {
        Ended::AutoTerm { steady_s } => out.push(format!(
            "--autoterm: the rate had been steady for {steady_s:.1} s; the run stopped after {:.1} s",
            r.timed_s
        )),
        Ended::OutOfObjects => out.push(
            "every object to delete was deleted before --duration ended".to_string(),
        ),
        _ => {}
    }
    if r.skipped > 0 {
        out.push(format!(
            "mixed: {} draws were passed over: the worker had no object of its own to read or delete then",
            r.skipped
        ));
    }
    if r.retries > 0 {
        out.push(format!(
            "{} requests were sent again after a 5xx answer or a broken connection; the figures count each request once",
            r.retries
        ));
    }
    out.push(left(r));
    out
}

fn left(r: &Report) -> String {
    let at = format!("s3://{}/{}", r.bucket, r.run_prefix);
    let listed = match (r.left.listed_objects, r.left.listed_bytes) {
        (Some(n), Some(b)) => format!(" (a LIST found {n} objects, {b} bytes)"),
        _ => String::new(),
    };
    match r.left.objects {
        0 => format!("nothing of this run is left under {at}{listed}"),
        n => format!(
            "this run left {n} objects ({} bytes) under {at}{listed}",
            r.left.bytes
        ),
    }
}
