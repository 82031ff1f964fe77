//! IOR report formats: IOR 4's text, its JSON and CSV summary files
//! (`-O summaryFormat`), and iolab's envelope JSON and CSV.

pub mod csv;
pub mod json;
pub mod summary_csv;
pub mod summary_json;
pub mod text;
