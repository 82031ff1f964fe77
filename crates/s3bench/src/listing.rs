//! LIST's continuation, bounded: a listing reads at most
//! [`MAX_LIST_PAGES`] pages, a token the service sent before ends it
//! ([`Tokens`]), and so does a stop request: a service that never stops
//! paging cannot hold a run.

/// Most LIST pages one listing reads (100 million keys at 1,000 a
/// page): a service that never stops sending continuation tokens ends
/// the listing with an error rather than holding the run.
pub const MAX_LIST_PAGES: u64 = 100_000;

/// The continuation tokens of one listing, to end it with an error when
/// the service sends one it sent before: a service answering a token with
/// itself, or cycling through a few (T0, T1, T0, ...), would list the same
/// pages until [`MAX_LIST_PAGES`] (100,000 pages of keys held in memory).
#[derive(Debug, Default)]
pub struct Tokens {
    seen: std::collections::HashSet<String>,
}

impl Tokens {
    /// The next token of a page, or the error of a repeated one.
    pub fn next(&mut self, next: Option<String>) -> std::io::Result<Option<String>> {
        match next {
            Some(t) if !self.seen.insert(t.clone()) => Err(std::io::Error::other(format!(
                "LIST: the service sent continuation token {t:?} a second time (it would list the same pages for ever)"
            ))),
            next => Ok(next),
        }
    }
}

/// The error of a listing a stop request (Ctrl-C) ended.
pub fn stopped() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "LIST: stopped by request")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_sent_before_ends_the_listing() {
        let mut t = Tokens::default();
        assert_eq!(t.next(Some("a".into())).unwrap(), Some("a".to_string()));
        assert_eq!(t.next(Some("b".into())).unwrap(), Some("b".to_string()));
        // A cycle of two, not only a token answered with itself.
        let e = t.next(Some("a".into())).unwrap_err();
        assert!(e.to_string().contains("a second time"), "{e}");
        assert_eq!(Tokens::default().next(None).unwrap(), None);
    }
}
