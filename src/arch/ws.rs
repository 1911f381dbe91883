//! The block of a warp-specialised kernel (`ld=ws`): the consumer warpgroups that multiply, one
//! producer warpgroup appended that loads, and how `setmaxnreg` splits the register file
//! between them. Legality and the code generator's planner both ask here, so they agree on the
//! thread count and the register counts.

use super::{Arch, RegisterRealloc};

/// The launch shape and register split of a warp-specialised block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsBlock {
    /// Threads that multiply and run the epilogue (ids `0..consumers`).
    pub consumers: u32,
    /// Threads of the producer warpgroup (ids `consumers..consumers + producers`).
    pub producers: u32,
    /// Registers per thread at entry (`.maxnreg`): the block's pool is this × all threads.
    pub entry_regs: u32,
    /// What the producer warpgroup keeps (`setmaxnreg.dec`).
    pub producer_regs: u32,
    /// What each consumer warpgroup asks for (`setmaxnreg.inc`): the most that fits the pool
    /// once the producer gave its surplus back, within the arch's cap.
    pub consumer_regs: u32,
}

impl WsBlock {
    /// Threads per block at launch.
    pub fn threads(&self) -> u32 {
        self.consumers + self.producers
    }

    /// Blocks of this shape resident on one SM of `arch` with `smem` bytes of shared memory
    /// each (at least 1): what a persistent grid launches per SM. The registers at entry
    /// (`.maxnreg` × threads) usually make it 1.
    pub fn resident_blocks(&self, arch: &Arch, smem: u32) -> u32 {
        let threads = self.threads();
        let by_regs = arch.regs_per_sm / (self.entry_regs * threads).max(1);
        let by_threads = arch.max_threads_per_sm / threads.max(1);
        let by_smem = arch.smem_per_sm.checked_div(smem).unwrap_or(u32::MAX);
        by_regs
            .min(by_threads)
            .min(by_smem)
            .min(arch.max_blocks_per_sm)
            .max(1)
    }
}

fn round_down(x: u32, granule: u32) -> u32 {
    x / granule * granule
}

/// The warp-specialised block over `consumers` threads (whole warpgroups) on `arch`, or why
/// there is none: no `setmaxnreg`, too many threads, or a register split that does not fit.
pub fn ws_block(arch: &Arch, consumers: u32) -> Result<WsBlock, String> {
    let Some(r): Option<RegisterRealloc> = arch.features.setmaxnreg else {
        return Err(format!(
            "{} has no setmaxnreg to give the producer's registers to the consumers",
            arch.name
        ));
    };
    let group = r.warps * arch.warp_size;
    if consumers == 0 || !consumers.is_multiple_of(group) {
        return Err(format!(
            "{consumers} consumer threads are not whole warpgroups of {group}"
        ));
    }
    let threads = consumers + group;
    if threads > arch.max_threads_per_block {
        return Err(format!(
            "{consumers} consumer threads + the {group}-thread producer warpgroup = {threads} \
             threads per block (at most {})",
            arch.max_threads_per_block
        ));
    }
    // The register file of one SM is what one block may use on every arch with setmaxnreg.
    // Not above the consumers' cap either: their `setmaxnreg.inc` must not lower the count.
    let entry = round_down(
        arch.max_regs_per_thread
            .min(arch.regs_per_sm / threads)
            .min(r.consumer_max),
        r.granule,
    );
    let warpgroups = consumers / group;
    let pool = entry * (warpgroups + 1);
    let consumer = pool
        .checked_sub(r.producer)
        .map(|left| round_down(left / warpgroups, r.granule).min(r.consumer_max))
        .unwrap_or(0);
    if entry < r.producer || consumer < r.min.max(entry) {
        return Err(format!(
            "{threads} threads leave {entry} registers a thread at entry: too few for the \
             producer's {} and a consumer share of at least as many",
            r.producer
        ));
    }
    Ok(WsBlock {
        consumers,
        producers: group,
        entry_regs: entry,
        producer_regs: r.producer,
        consumer_regs: consumer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_register_split_fits_the_pool_at_entry() {
        let h = Arch::SM_90;
        // One consumer warpgroup: 256 threads, 232 at entry (the consumers' cap: an inc must
        // not lower the count).
        let b = ws_block(&h, 128).unwrap();
        assert_eq!(
            (b.threads(), b.entry_regs, b.consumer_regs),
            (256, 232, 232)
        );
        // Two (CUTLASS's cooperative kernels): 384 threads, 168 at entry, 40 / 232.
        let b = ws_block(&h, 256).unwrap();
        assert_eq!(
            (b.threads(), b.entry_regs, b.consumer_regs),
            (384, 168, 232)
        );
        for w in 1..=7u32 {
            let b = ws_block(&h, 128 * w).unwrap();
            let used = 128 * (w * b.consumer_regs + b.producer_regs);
            assert!(used <= b.entry_regs * b.threads(), "{w}: {used}");
            assert!(
                used <= h.regs_per_sm && b.consumer_regs.is_multiple_of(8),
                "{w}"
            );
            assert!(b.consumer_regs >= b.entry_regs, "{w}");
        }
        // Eight consumer warpgroups + the producer exceed 1024 threads.
        assert!(ws_block(&h, 1024).unwrap_err().contains("1152 threads"));
        assert!(ws_block(&Arch::SM_80, 128)
            .unwrap_err()
            .contains("setmaxnreg"));
        assert!(ws_block(&h, 96).is_err());
        // The whole register file at entry: one block per SM, whatever its shared memory.
        assert_eq!(ws_block(&h, 128).unwrap().resident_blocks(&h, 1024), 1);
        assert_eq!(ws_block(&h, 256).unwrap().resident_blocks(&h, 200_000), 1);
    }
}
