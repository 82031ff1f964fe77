//! XDD report formats (text tables, CSV, JSON).
