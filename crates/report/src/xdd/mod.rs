//! XDD report formats: the text report (preamble and result table), CSV,
//! JSON, heartbeat lines, the -timestamps reports and the columns they
//! share. Pure functions from
//! `iolab_xdd::results` to strings.

pub mod columns;
pub mod csv;
pub mod heartbeat;
pub mod json;
pub mod preamble;
pub mod rows;
pub mod text;
pub mod timestamps;
