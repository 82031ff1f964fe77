//! LIST's continuation, bounded: a listing reads at most
//! [`MAX_LIST_PAGES`] pages, and a token the service answers with
//! itself ends it, so a service that never stops paging cannot hold a
//! run.

/// Most LIST pages one listing reads (100 million keys at 1,000 a
/// page): a service that never stops sending continuation tokens ends
/// the listing with an error rather than holding the run.
pub const MAX_LIST_PAGES: u64 = 100_000;

/// The next continuation token of a page, or an error when the service
/// sent back the one it was given (it would list the same page for ever).
pub fn next_token(sent: Option<&str>, next: Option<String>) -> std::io::Result<Option<String>> {
    match next {
        Some(t) if Some(t.as_str()) == sent => Err(std::io::Error::other(format!(
            "LIST: the service answered continuation token {t:?} with itself"
        ))),
        next => Ok(next),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answered_with_itself_ends_the_listing() {
        assert_eq!(next_token(None, None).unwrap(), None);
        assert_eq!(
            next_token(Some("a"), Some("b".into())).unwrap(),
            Some("b".to_string())
        );
        let e = next_token(Some("a"), Some("a".into())).unwrap_err();
        assert!(e.to_string().contains("with itself"), "{e}");
    }
}
