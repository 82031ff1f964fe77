//! Charts and the HTML report of series.
