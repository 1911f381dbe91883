//! lowering (in progress)
