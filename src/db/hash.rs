//! A fast, non-cryptographic hasher for the database's in-memory indexes.
//!
//! `std`'s SipHash resists hash flooding, which matters for untrusted network input, not for
//! problem keys from our own files; its cost dominated exact lookups. This is the multiply-rotate
//! hash rustc uses internally (FxHash), processing 8 bytes a step.

use std::hash::{BuildHasherDefault, Hasher};

/// FxHash state.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `HashMap` builder using [`FxHasher`].
pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    #[test]
    fn distinct_inputs_hash_differently() {
        let h = |v: &dyn Fn(&mut FxHasher)| {
            let mut s = FxBuild::default().build_hasher();
            v(&mut s);
            s.finish()
        };
        assert_ne!(h(&|s| 1u32.hash(s)), h(&|s| 2u32.hash(s)));
        assert_ne!(h(&|s| "abcdefghi".hash(s)), h(&|s| "abcdefghj".hash(s)));
        assert_eq!(h(&|s| [1u8, 2, 3].hash(s)), h(&|s| [1u8, 2, 3].hash(s)));
    }
}
