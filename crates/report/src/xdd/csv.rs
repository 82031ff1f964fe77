//! The -csvout file: the same rows and columns as the text table,
//! separated by commas.

use super::columns::selected;
use super::rows::rows;
use iolab_xdd::results::RunResults;

/// Header line, units line and one line per row.
pub fn render(r: &RunResults) -> String {
    let cols = selected(&r.config.global.outputformat);
    let x = super::text::ctx(r);
    let mut s = cols.iter().map(|c| c.header).collect::<Vec<_>>().join(",") + "\n";
    s += &(cols.iter().map(|c| c.units).collect::<Vec<_>>().join(",") + "\n");
    for row in rows(r) {
        s += &(cols
            .iter()
            .map(|c| (c.value)(&row, x))
            .collect::<Vec<_>>()
            .join(",")
            + "\n");
    }
    s
}
