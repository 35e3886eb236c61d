//! The dynamic Fisher market solver (to be written: issue 3).
