//! What the fields of a [`PerfConfig`] mean on the depthwise path (`mma=dw`): the one place
//! legality, the code generator and the cost model read them from.
//!
//! The kernel has no GEMM: each thread owns `va` consecutive channels of the written tensor
//! (one 16-byte vector at most) for a tile of `vc` output rows × `vb` output columns, and a
//! block is `bm / va` channel vectors × `bn / (vb · vc)` pixel tiles. The fields are chosen
//! among those whose values the default search space already lists in the right ranges
//! (`va`, `vb`, `vc` take 1–8; `bm`, `bn` 16–256), so that the path needs no new field and
//! no larger raw space:
//!
//! | field | meaning with `mma=dw` |
//! | --- | --- |
//! | `bm` | channels of the written tensor per block (a multiple of `va`) |
//! | `bn` | output pixels per block (a multiple of `vb · vc`) |
//! | `va` | channels per thread: the vector width of every activation access |
//! | `vb` | output columns (along W) per thread |
//! | `vc` | output rows (along H) per thread |
//! | `red` | backward weight: how the blocks' sums meet ([`DwSums`]); ignored otherwise |
//! | `xf` | the layout transform, as on the GEMM paths |
//!
//! Every other field ([`DwTile::IGNORED`], and `red` off backward weight) means nothing here;
//! a search enumerates only the smallest value its space lists for each, so that one kernel is
//! not timed under many names.

use super::{Field, PerfConfig, Reduction};

/// How backward weight's blocks combine their f32 sums into the filter gradient (`red`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DwSums {
    /// `red=atomic`: one f32 atomic add per channel and tap and block into a zeroed gradient
    /// (its f32 copy in the workspace for a 16-bit filter, converted after). Every block adds
    /// into the same few thousand addresses, and those adds serialise at the L2.
    Atomic,
    /// `red=fixup`: each block stores its sums to a slot of its own in the workspace, and a
    /// second kernel adds the slots in block order and writes the gradient in its type: no
    /// atomics and no zeroing, and the same bits on every run (deterministic, as PyTorch's
    /// `use_deterministic_algorithms` asks).
    Partials,
}

impl DwSums {
    /// What `red` asks for; `None` for a value the depthwise kernel has no use for (`stream`).
    pub fn of(red: Reduction) -> Option<DwSums> {
        match red {
            Reduction::Atomic => Some(DwSums::Atomic),
            Reduction::Fixup => Some(DwSums::Partials),
            Reduction::Stream => None,
        }
    }
}

/// The depthwise tile of a config (`mma=dw`), read from the fields the module table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DwTile {
    /// Channels per block (`bm`).
    pub channels: u32,
    /// Output pixels per block (`bn`).
    pub pixels: u32,
    /// Channels per thread, the vector width (`va`).
    pub vec: u32,
    /// Output columns per thread (`vb`).
    pub cols: u32,
    /// Output rows per thread (`vc`).
    pub rows: u32,
    /// Backward weight: how the blocks' sums meet (`red`; `None` for `stream`, which legality
    /// refuses there).
    pub sums: Option<DwSums>,
}

impl DwTile {
    /// The fields the depthwise kernel does not read.
    pub const IGNORED: [Field; 9] = [
        Field::WarpM,
        Field::WarpN,
        Field::BlockK,
        Field::Stages,
        Field::Lds,
        Field::Ld,
        Field::SplitK,
        Field::Raster,
        Field::Persistent,
    ];

    /// The tile of `cfg` (whatever its `mma`).
    pub fn of(cfg: &PerfConfig) -> Self {
        DwTile {
            channels: cfg.block_m,
            pixels: cfg.block_n,
            vec: cfg.vec_a,
            cols: cfg.vec_b,
            rows: cfg.vec_c,
            sums: DwSums::of(cfg.red),
        }
    }

    /// Output pixels per thread.
    pub fn pixels_per_thread(&self) -> u32 {
        self.cols * self.rows
    }

    /// Channel vectors per block (threads along the channels, the fastest-varying).
    pub fn channel_vectors(&self) -> u32 {
        self.channels / self.vec.max(1)
    }

    /// Pixel tiles per block (threads along the pixels).
    pub fn tiles(&self) -> u32 {
        self.pixels / self.pixels_per_thread().max(1)
    }

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        self.channel_vectors() * self.tiles()
    }

    /// Why the tile is not a whole number of threads, if it is not (whatever the problem).
    pub fn misfit(&self) -> Option<String> {
        if !self.channels.is_multiple_of(self.vec.max(1)) {
            return Some(format!(
                "bm = {} channels per block is not a whole number of va = {} vectors",
                self.channels, self.vec
            ));
        }
        let per = self.pixels_per_thread();
        if !self.pixels.is_multiple_of(per.max(1)) {
            return Some(format!(
                "bn = {} pixels per block is not a whole number of vb × vc = {per} pixel tiles",
                self.pixels
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_map_to_the_tile() {
        let c: PerfConfig =
            "v2:bm=256,bn=32,bk=16,wm=16,wn=16,st=2,va=8,vb=4,vc=1,lds=pad,sk=1,rs=1,mma=dw"
                .parse()
                .unwrap();
        let t = DwTile::of(&c);
        assert_eq!(
            (t.channels, t.pixels, t.vec, t.cols, t.rows),
            (256, 32, 8, 4, 1)
        );
        assert_eq!((t.channel_vectors(), t.tiles(), t.threads()), (32, 8, 256));
        assert_eq!(c.warps(), 8);
        assert_eq!(t.misfit(), None);
        let odd = DwTile { pixels: 30, ..t };
        assert!(odd.misfit().unwrap().contains("vb × vc = 4"));
        let odd = DwTile { vec: 3, ..t };
        assert!(odd.misfit().unwrap().contains("va = 3"));
        // The fields the kernel reads are not among the ignored ones.
        for f in [
            Field::BlockM,
            Field::BlockN,
            Field::VecA,
            Field::VecB,
            Field::VecC,
            Field::Xf,
        ] {
            assert!(!DwTile::IGNORED.contains(&f), "{f:?}");
        }
    }
}
