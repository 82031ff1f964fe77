//! The mdtest metadata benchmark engine.
