//! mdtest report formats: mdtest 1.9.3's text layout, JSON and CSV.

pub mod csv;
pub mod json;
pub mod text;
