//! search (in progress)
