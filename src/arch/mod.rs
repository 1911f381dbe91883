//! arch (in progress)
