//! What a run has to tell besides its figures: why it ended early, what
//! it passed over or sent again, and what it left in the bucket.

use crate::result::{Ended, Left, Report};

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
    if r.unaddressable > 0 {
        out.push(format!(
            "--list-existing: {} listed objects were passed over: their keys have a `.` or `..` segment or more than 1024 bytes, which a request cannot name unchanged",
            r.unaddressable
        ));
    }
    if r.retries > 0 {
        out.push(format!(
            "{} requests were sent again after a 5xx answer or a broken connection; the figures count each request once",
            r.retries
        ));
    }
    out.push(left(
        &r.left,
        &format!("s3://{}/{}", r.bucket, r.run_prefix),
    ));
    out
}

/// What the run left under `at`, by its count and by the LIST after it.
fn left(l: &Left, at: &str) -> String {
    let counted = match l.objects {
        0 => format!("nothing of this run is left under {at}"),
        n => format!("this run left {n} objects ({} bytes) under {at}", l.bytes),
    };
    // A LIST that disagrees is said as a disagreement (the outcome is
    // the check's error): "nothing is left ... (a LIST found 3 objects)"
    // read as a contradiction.
    match (l.listed_objects, l.listed_bytes) {
        (Some(n), Some(b)) if l.agrees() => {
            format!("{counted} (a LIST found {n} objects, {b} bytes)")
        }
        (Some(n), Some(b)) => format!(
            "{counted} by the run's own count, but a LIST found {n} objects ({b} bytes) there: something else wrote or removed objects under it"
        ),
        // The check LIST failed: the count is the run's alone, and no
        // removal is claimed that no LIST saw.
        _ => format!("{counted} by the run's own count; the LIST that checks it failed, so this is not confirmed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_that_disagrees_is_said_as_such() {
        let l = |listed| Left {
            objects: 0,
            bytes: 0,
            listed_objects: listed,
            listed_bytes: listed.map(|n| n * 3),
        };
        assert_eq!(
            left(&l(None), "s3://b/p/"),
            "nothing of this run is left under s3://b/p/ by the run's own count; the LIST that checks it failed, so this is not confirmed"
        );
        assert!(left(&l(Some(0)), "s3://b/p/").ends_with("(a LIST found 0 objects, 0 bytes)"));
        let odd = left(&l(Some(3)), "s3://b/p/");
        assert!(
            odd.contains("by the run's own count, but a LIST found 3 objects (9 bytes)"),
            "{odd}"
        );
    }
}
