//! Leaving the L2 cache cold *and clean* before each timed run: a kernel that reads a buffer
//! of twice the L2, in a small hand-written PTX module.
//!
//! Why not a memset of that buffer (what the measurer did until session 14): a memset leaves
//! the L2 full of dirty lines, and the timed run's first reads must write them back to DRAM
//! before they can use the lines. On the H200 (session 14, `scripts/session14/dirty-l2.py`)
//! that made cuDNN's own bwd-weight 1×1 c128→512 28×28 call take 45.9 µs after a memset
//! against 25.8 µs after a read of an unrelated buffer (22.8 µs in graph replays); on
//! compute-bound layers the two agreed within 0.5%. The write-back is not the kernel's cost:
//! in a network the lines in L2 are mostly the previous layer's output, our input. It also
//! ranked candidates by how they cope with the write-back storm. A read sweep evicts the
//! candidate's operands just as well and leaves only clean lines, which cost nothing to drop;
//! it is the cold state Nsight Compute's cache control gives.

use super::cuda::{alloc, memset, HandKernel};
use super::error::RuntimeError;
use cudarc::driver::{result, CudaContext, CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// The kernel's symbol.
const KERNEL: &str = "convtune_l2_sweep";
/// Threads a block; each loads 16 bytes a step.
const THREADS: u32 = 256;
/// Blocks: several per SM of any GPU this runs on, each thread then loops.
const BLOCKS: u32 = 1024;
/// The XOR of everything read is stored only if it equals this (it never does: the buffer is
/// zero), so the loads are live without a store per thread.
const NEVER: u32 = 0x9E37_79B9;

/// `convtune_l2_sweep(buffer, vectors, sink)`: every thread XORs the 16-byte vectors
/// `i, i + threads, …` of `buffer`, loaded `.cg` (through L2, not L1).
fn ptx() -> String {
    format!(
        ".version 7.0\n.target sm_70\n.address_size 64\n\n\
.visible .entry {KERNEL}(\n\t.param .u64 buf_p,\n\t.param .u64 n_p,\n\t.param .u64 sink_p\n)\n{{\n\
\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<16>;\n\n\
\tld.param.u64 %rd1, [buf_p];\n\tld.param.u64 %rd2, [n_p];\n\tld.param.u64 %rd3, [sink_p];\n\
\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd3, %rd3;\n\
\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n\tmov.u32 %r4, %nctaid.x;\n\
\tmul.wide.u32 %rd4, %r1, %r2;\n\tcvt.u64.u32 %rd5, %r3;\n\tadd.u64 %rd4, %rd4, %rd5;\n\
\tmul.wide.u32 %rd6, %r4, %r2;\n\
\tmov.u32 %r10, 0;\n\
LOOP:\n\
\tsetp.ge.u64 %p1, %rd4, %rd2;\n\t@%p1 bra DONE;\n\
\tshl.b64 %rd7, %rd4, 4;\n\tadd.u64 %rd8, %rd1, %rd7;\n\
\tld.global.cg.v4.u32 {{%r5, %r6, %r7, %r8}}, [%rd8];\n\
\txor.b32 %r10, %r10, %r5;\n\txor.b32 %r10, %r10, %r6;\n\
\txor.b32 %r10, %r10, %r7;\n\txor.b32 %r10, %r10, %r8;\n\
\tadd.u64 %rd4, %rd4, %rd6;\n\tbra LOOP;\n\
DONE:\n\
\tsetp.ne.u32 %p2, %r10, {NEVER};\n\t@%p2 bra END;\n\
\tst.global.u32 [%rd3], %r10;\n\
END:\n\tret;\n}}\n"
    )
}

/// The loaded sweep kernel and the buffer it reads.
pub(crate) struct L2Sweep {
    kernel: HandKernel,
    buffer: CudaSlice<u8>,
    sink: CudaSlice<u8>,
}

impl L2Sweep {
    /// Loads the kernel and allocates (and zeroes, once) a buffer of `bytes` (rounded up to 16).
    pub fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        bytes: usize,
    ) -> Result<L2Sweep, RuntimeError> {
        let kernel = HandKernel::load(ctx, &ptx(), KERNEL)
            .map_err(|e| RuntimeError::Module(format!("the L2 sweep kernel: {e}")))?;
        let bytes = bytes.next_multiple_of(16);
        let buffer = alloc(stream, bytes, "L2 sweep buffer")?;
        memset(stream, &buffer, bytes, 0)
            .map_err(|e| RuntimeError::driver("cuMemsetD8Async", "L2 sweep buffer", e))?;
        let sink = alloc(stream, 4, "L2 sweep sink")?;
        Ok(L2Sweep {
            kernel,
            buffer,
            sink,
        })
    }

    /// Enqueues one sweep on `stream`.
    pub fn run(&self, stream: &Arc<CudaStream>) -> Result<(), result::DriverError> {
        // (buffer, 16-byte vectors in it, 4-byte sink)
        let mut args = [
            self.buffer.device_ptr(stream).0,
            (self.buffer.len() / 16) as u64,
            self.sink.device_ptr(stream).0,
        ];
        self.kernel.launch(stream, BLOCKS, THREADS, &mut args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_loads_through_l2_and_keeps_its_loads_live() {
        let p = ptx();
        assert!(p.contains(&format!(".visible .entry {KERNEL}(")));
        assert!(p.contains("ld.global.cg.v4.u32"));
        // The only store is behind the never-taken comparison with the XOR of the loads.
        assert_eq!(p.matches("st.global").count(), 1);
        assert!(p.contains(&format!("setp.ne.u32 %p2, %r10, {NEVER}")));
    }

    /// With a real `ptxas`: the hand-written module assembles for the H200, cleanly.
    #[test]
    fn the_sweep_assembles_for_sm_90() {
        let Some(asm) = super::super::Ptxas::find() else {
            eprintln!("SKIP: no ptxas found (set CONVTUNE_PTXAS or put ptxas on PATH)");
            return;
        };
        let done = asm
            .assemble_for(&ptx(), Some("sm_90"))
            .expect("the sweep kernel assembles");
        assert_eq!(&done.cubin[..4], b"\x7fELF");
        assert_eq!(done.spill_bytes(), 0);
        assert!(done.fatal_warning().is_none(), "{}", done.log);
    }
}
