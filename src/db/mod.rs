//! db (in progress)
