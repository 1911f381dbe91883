//! codegen (in progress)
