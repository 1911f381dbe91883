//! space (in progress)
