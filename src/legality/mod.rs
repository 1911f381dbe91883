//! legality (in progress)
