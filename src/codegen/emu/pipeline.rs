//! The warp-specialised pipeline's instructions in the emulator (`ld=ws`), written from the PTX
//! ISA ("mbarrier.arrive", "cp.async.mbarrier.arrive", "bar.sync", "setmaxnreg") independently
//! of the kernel side (`codegen/ws.rs`), on the `mbarrier`s of `sync.rs`:
//! - `mbarrier.arrive`: one arrival on the current phase; more arrivals than the count (with
//!   the phase not yet observed complete) are reported.
//! - `cp.async.mbarrier.arrive.noinc`: the arrival is made once every `cp.async` the thread
//!   issued before has landed. Here the copies are read when the arrival is made and written
//!   to shared memory when the phase completes (the latest moment the ISA allows, as for
//!   `cp.async` groups), so a consumer that reads the stage without waiting for the phase sees
//!   stale data. `.noinc`: the arrival counts against the init count, so an init count that
//!   leaves these arrivals out completes a phase early (or never) and is caught.
//! - `bar.sync id, count`: a barrier of its own per id; every arriving thread must name the
//!   same count, a multiple of the warp size, within the block.
//! - `setmaxnreg`: no registers to move on the host; the value must be in range, a multiple of
//!   8, and the same for every thread of a warpgroup at the same point of its program.
//!
//! Waits go through the block's deadlock test (`sync.rs`): when every thread still running is
//! blocked and none can go on, that is reported at once and the block's waits end.

use super::runtime::{thread, Thread};
use super::sync::{bar_offset, with_bar, Landing, Named, Wait};

pub(crate) extern "C" fn emu_mbar_arrive(ctx: *const u8, bar: *const u8) {
    // SAFETY: called by emulated kernels with their context.
    let t = unsafe { thread(ctx) };
    arrive(t, bar, "mbarrier.arrive", Vec::new());
}

/// One arrival on `bar`, whose phase then also lands `copies`.
fn arrive(t: &Thread, bar: *const u8, what: &str, copies: Vec<Landing>) {
    with_bar(t, bar, what, |tma, at, m| {
        // A due phase has completed by now: this arrival belongs to the next one.
        tma.complete_if_due(t, m);
        if m.pending == 0 {
            t.record(&format!("{what} at {at:#x}: more arrivals than its count"));
            return;
        }
        m.pending -= 1;
        m.copies.extend(copies);
        tma.cv.notify_all();
    });
}

pub(crate) extern "C" fn emu_cp_async_arrive(ctx: *const u8, bar: *const u8) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let what = "cp.async.mbarrier.arrive.noinc";
    if bar_offset(t, bar, what).is_none() {
        return;
    }
    let base = t.block.smem as usize;
    let copies = t
        .take_copies()
        .into_iter()
        .map(|c| {
            let mut bytes = [0u8; 16];
            // SAFETY: the source range was checked when the copy was queued.
            unsafe {
                std::ptr::copy_nonoverlapping(c.src as *const u8, bytes.as_mut_ptr(), c.src_bytes)
            };
            Landing {
                off: c.dst - base,
                bytes,
                len: c.bytes,
            }
        })
        .collect();
    arrive(t, bar, what, copies);
}

pub(crate) extern "C" fn emu_named_barrier(ctx: *const u8, id: u32, count: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let b = t.block;
    if id == 0 || id >= 16 || count == 0 || !count.is_multiple_of(b.warp) || count > b.threads {
        t.record(&format!(
            "bar.sync {id}, {count}: id 1..15 (0 is the block barrier) and a count of whole \
             warps within the block's {} threads",
            b.threads
        ));
        return;
    }
    let tma = &b.sync;
    let generation = {
        let mut st = tma.lock();
        let n = st.named.entry(id).or_insert_with(Named::default);
        if n.arrived == 0 {
            n.count = count;
        } else if n.count != count {
            let had = n.count;
            drop(st);
            t.record(&format!(
                "bar.sync {id}, {count} while the threads already there name {had}"
            ));
            return;
        }
        n.arrived += 1;
        if n.arrived == n.count {
            n.arrived = 0;
            n.generation += 1;
            tma.cv.notify_all();
            return;
        }
        n.generation
    };
    tma.block_on(t, Wait::Named { id, generation }, |st| {
        st.named
            .get(&id)
            .is_some_and(|n| n.generation != generation)
    });
}

pub(crate) extern "C" fn emu_setmaxnreg(ctx: *const u8, inc: u32, regs: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let inc = inc != 0;
    if !(24..=256).contains(&regs) || !regs.is_multiple_of(8) {
        t.record(&format!(
            "setmaxnreg {regs}: not a multiple of 8 in 24..=256"
        ));
    }
    let key = (t.tid / (4 * t.block.warp), t.next_realloc());
    let mut st = t.block.sync.lock();
    match st.regs.get(&key) {
        Some(&seen) if seen != (inc, regs) => {
            drop(st);
            t.record(&format!(
                "setmaxnreg.{} {regs} where another thread of warpgroup {} had {} {}",
                if inc { "inc" } else { "dec" },
                key.0,
                if seen.0 { "inc" } else { "dec" },
                seen.1
            ));
        }
        Some(_) => {}
        None => {
            st.regs.insert(key, (inc, regs));
        }
    }
}

/// The runtime functions of this file, by the names the host spec declares.
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_mbar_arrive", emu_mbar_arrive as *const () as usize),
        (
            "emu_cp_async_arrive",
            emu_cp_async_arrive as *const () as usize,
        ),
        ("emu_named_barrier", emu_named_barrier as *const () as usize),
        ("emu_setmaxnreg", emu_setmaxnreg as *const () as usize),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::emu::runtime::{emu_cp_async, Block, Violations};
    use crate::codegen::emu::tma::{emu_mbar_arrive_tx, emu_mbar_init, emu_mbar_wait};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Runs `f` with `threads` thread contexts of one block (2 KiB of poisoned shared memory,
    /// a 64-byte buffer of bytes 0..64 as buffer 0), one after the other on this OS thread;
    /// returns the shared memory and the violations.
    fn with_block(
        threads: u32,
        f: impl FnOnce(&[*const u8], usize, usize),
    ) -> (Vec<u8>, Violations) {
        let mut data: Vec<u8> = (0..64).collect();
        let mut smem = vec![u128::MAX; 128];
        let violations = Mutex::new(Violations::default());
        let buffers = [(data.as_mut_ptr() as usize, 64), (0, 0), (0, 0), (0, 0)];
        {
            let mut block = Block::new(threads, 32, [0; 3], &mut smem, buffers, &violations);
            // Long enough that only the stuck test can end a wait within the test's bound.
            block.sync.wait_limit = Duration::from_secs(30);
            let ts: Vec<Thread> = (0..threads).map(|i| Thread::new(i, &block)).collect();
            let ctxs: Vec<*const u8> = ts.iter().map(|t| t as *const Thread as *const u8).collect();
            f(&ctxs, block.smem as usize, buffers[0].0);
        }
        let bytes = smem.iter().flat_map(|w| w.to_le_bytes()).collect();
        (bytes, violations.into_inner().unwrap())
    }

    #[test]
    fn cp_async_arrivals_land_with_the_phase_and_a_wrong_parity_is_a_prompt_deadlock() {
        let started = Instant::now();
        let (smem, v) = with_block(1, |t, smem, buf| {
            let bar = (smem + 1024) as *const u8;
            emu_mbar_init(t[0], bar, 1);
            emu_cp_async(t[0], smem as *mut u8, buf as *const u8, 16, 16);
            emu_cp_async(t[0], (smem + 16) as *mut u8, buf as *const u8, 16, 0);
            emu_cp_async_arrive(t[0], bar);
            // The arrival is in, the phase not yet observed: nothing landed.
            // SAFETY: smem is the block's 2 KiB.
            assert_eq!(unsafe { *(smem as *const u8) }, 0xFF);
            emu_mbar_wait(t[0], bar, 0);
            // Phase 0 is complete: waiting for it again passes at once.
            emu_mbar_wait(t[0], bar, 0);
            // Parity 1 is the phase now running, which no one will complete: the only thread
            // of the block is blocked on it, reported at once rather than after the limit.
            emu_mbar_wait(t[0], bar, 1);
            // The phase's one arrival announces 16 bytes that never land: a second arrival
            // exceeds the count (with the bytes in, it would have begun the next phase).
            emu_mbar_arrive_tx(t[0], bar, 16);
            emu_mbar_arrive(t[0], bar);
        });
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(&smem[..16], &(0..16).collect::<Vec<u8>>()[..]);
        assert_eq!(&smem[16..32], &[0u8; 16], "src_bytes 0 zero-fills");
        let all = v.messages.join("\n");
        assert!(all.contains("deadlock"), "{all}");
        assert!(all.contains("more arrivals than its count"), "{all}");
        assert_eq!(v.count, 2, "{all}");
    }

    #[test]
    fn a_consumer_that_skips_the_full_wait_reads_stale_data() {
        // The producer (thread 1) copies and arrives; the consumer (thread 0) reads the stage
        // without waiting: the copy has not landed, whatever the timing.
        let (smem, v) = with_block(2, |t, smem, buf| {
            let bar = (smem + 1024) as *const u8;
            emu_mbar_init(t[0], bar, 1);
            emu_cp_async(t[1], smem as *mut u8, buf as *const u8, 16, 16);
            emu_cp_async_arrive(t[1], bar);
            // SAFETY: smem is the block's 2 KiB.
            assert_eq!(unsafe { *((smem + 1) as *const u8) }, 0xFF);
            emu_mbar_wait(t[0], bar, 0);
            // SAFETY: as above.
            assert_eq!(unsafe { *((smem + 1) as *const u8) }, 1);
        });
        assert_eq!(smem[5], 5);
        assert_eq!(v.count, 0, "{:?}", v.messages);
    }

    #[test]
    fn named_barrier_counts_and_setmaxnreg_must_agree() {
        let (_, v) = with_block(64, |t, _, _| {
            // Two threads of warpgroup 0 disagree; one asks for a count out of range.
            emu_setmaxnreg(t[0], 1, 232);
            emu_setmaxnreg(t[1], 1, 224);
            emu_setmaxnreg(t[2], 0, 20);
            // A count of no whole number of warps, and the block barrier's id.
            emu_named_barrier(t[1], 1, 48);
            emu_named_barrier(t[2], 0, 32);
        });
        let all = v.messages.join("\n");
        assert!(
            all.contains("another thread of warpgroup 0 had inc 232"),
            "{all}"
        );
        assert!(all.contains("setmaxnreg 20"), "{all}");
        assert!(all.contains("bar.sync 1, 48"), "{all}");
        assert!(all.contains("bar.sync 0, 32"), "{all}");
    }
}
