//! What a run leaves: its results and figures, the output files
//! (`-output`, `-csvout`, time stamps) and the restart records of a copy.

pub mod figures;
pub mod outputs;
pub mod pass;
pub mod passlog;
pub mod restart;
pub mod results;
pub mod timestamp;
