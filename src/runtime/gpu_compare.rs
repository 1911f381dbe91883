//! The check of a candidate's output against the reference, on the GPU: the rule of
//! [`host::compare`] (‖out − ref‖² over finite elements, ‖ref‖², poison counted as unwritten,
//! other NaN/inf as non-finite) in a small hand-written PTX kernel, so that only 32 bytes come
//! back instead of the whole written tensor.
//!
//! Why: on the H200 (session 12) copying a 12.8 M-element output back and comparing it on
//! the CPU took 10–21 ms of the measuring thread a candidate, while the compile pool and the
//! assemblers kept every core busy: 5.5 s of a 10 s `--time 10` search, more than loading
//! and timing together. The kernel reads the tensor once at device bandwidth.
//!
//! The kernel is not trusted blindly: [`GpuCheck::new`] runs it on three outputs whose answer
//! the host knows (the reference itself, all poison, all zero) and the measurer keeps the CPU
//! comparison when any of them disagrees.

use super::cuda::{alloc, memset, HandKernel};
use super::host::{self, Comparison, POISON};
use crate::problem::DType;
use cudarc::driver::{result, CudaContext, CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// The kernel's symbol.
const KERNEL: &str = "convtune_compare";

/// Threads a block, and elements each thread takes at least before another block is added.
const THREADS: u32 = 256;
const PER_THREAD: u64 = 8;
/// Most blocks: enough to fill an H200 several times over; each thread then loops.
const MAX_BLOCKS: u64 = 1024;

/// Bytes of the result: f64 ‖out − ref‖², f64 ‖ref‖², u64 unwritten, u64 non-finite.
const RESULT_BYTES: usize = 32;

/// How the kernel reads one element of `dtype`: PTX that leaves its bits (zero-extended) in
/// `%r5` and its value as f32 in `%f2` from element index `%rd5` of the output at `%rd1`, and
/// the exponent mask and poison pattern of the type.
fn element(dtype: DType) -> (&'static str, u32, u32) {
    match dtype {
        DType::BF16 => (
            "shl.b64 %rd10, %rd5, 1;\n\tadd.u64 %rd11, %rd1, %rd10;\n\t\
             ld.global.nc.u16 %h1, [%rd11];\n\tcvt.u32.u16 %r5, %h1;\n\t\
             shl.b32 %r6, %r5, 16;\n\tmov.b32 %f2, %r6;",
            0x7F80,
            0xFFFF,
        ),
        DType::F16 => (
            "shl.b64 %rd10, %rd5, 1;\n\tadd.u64 %rd11, %rd1, %rd10;\n\t\
             ld.global.nc.u16 %h1, [%rd11];\n\tcvt.u32.u16 %r5, %h1;\n\t\
             cvt.f32.f16 %f2, %h1;",
            0x7C00,
            0xFFFF,
        ),
        DType::F32 => (
            "shl.b64 %rd10, %rd5, 2;\n\tadd.u64 %rd11, %rd1, %rd10;\n\t\
             ld.global.nc.u32 %r5, [%rd11];\n\tmov.b32 %f2, %r5;",
            0x7F80_0000,
            0xFFFF_FFFF,
        ),
    }
}

/// The compare kernel for outputs of `dtype`: `(out, reference as f32, n, result)`. Each
/// thread walks elements `i, i + threads, …`, the sums are added across each warp by
/// butterfly shuffles, and lane 0 adds them into the result with global reductions.
pub(crate) fn ptx(dtype: DType) -> String {
    let (load, exp, poison) = element(dtype);
    debug_assert_eq!(u64::from(poison) & 0xFF, u64::from(POISON));
    let mut reduce = String::new();
    for off in [16, 8, 4, 2, 1] {
        reduce += &format!(
            "\tmov.b64 {{%r12, %r13}}, %fd1;\n\
             \tshfl.sync.bfly.b32 %r14, %r12, {off}, 31, 0xffffffff;\n\
             \tshfl.sync.bfly.b32 %r15, %r13, {off}, 31, 0xffffffff;\n\
             \tmov.b64 %fd6, {{%r14, %r15}};\n\
             \tadd.f64 %fd1, %fd1, %fd6;\n\
             \tmov.b64 {{%r12, %r13}}, %fd2;\n\
             \tshfl.sync.bfly.b32 %r14, %r12, {off}, 31, 0xffffffff;\n\
             \tshfl.sync.bfly.b32 %r15, %r13, {off}, 31, 0xffffffff;\n\
             \tmov.b64 %fd7, {{%r14, %r15}};\n\
             \tadd.f64 %fd2, %fd2, %fd7;\n\
             \tshfl.sync.bfly.b32 %r16, %r10, {off}, 31, 0xffffffff;\n\
             \tadd.u32 %r10, %r10, %r16;\n\
             \tshfl.sync.bfly.b32 %r17, %r11, {off}, 31, 0xffffffff;\n\
             \tadd.u32 %r11, %r11, %r17;\n"
        );
    }
    format!(
        ".version 7.0\n.target sm_70\n.address_size 64\n\n\
.visible .entry {KERNEL}(\n\t.param .u64 out_p,\n\t.param .u64 ref_p,\n\t.param .u64 n_p,\n\t.param .u64 res_p\n)\n{{\n\
\t.reg .pred %p<8>;\n\t.reg .b16 %h<2>;\n\t.reg .b32 %r<24>;\n\t.reg .b64 %rd<24>;\n\
\t.reg .f32 %f<4>;\n\t.reg .f64 %fd<16>;\n\n\
\tld.param.u64 %rd1, [out_p];\n\tld.param.u64 %rd2, [ref_p];\n\
\tld.param.u64 %rd3, [n_p];\n\tld.param.u64 %rd4, [res_p];\n\
\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd2, %rd2;\n\tcvta.to.global.u64 %rd4, %rd4;\n\
\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n\tmov.u32 %r4, %nctaid.x;\n\
\tmul.wide.u32 %rd5, %r1, %r2;\n\tcvt.u64.u32 %rd6, %r3;\n\tadd.u64 %rd5, %rd5, %rd6;\n\
\tmul.wide.u32 %rd7, %r4, %r2;\n\
\tmov.f64 %fd1, 0d0000000000000000;\n\tmov.f64 %fd2, 0d0000000000000000;\n\
\tmov.u32 %r10, 0;\n\tmov.u32 %r11, 0;\n\
LOOP:\n\
\tsetp.ge.u64 %p1, %rd5, %rd3;\n\t@%p1 bra DONE;\n\
\tshl.b64 %rd8, %rd5, 2;\n\tadd.u64 %rd9, %rd2, %rd8;\n\tld.global.nc.f32 %f1, [%rd9];\n\
\tcvt.f64.f32 %fd3, %f1;\n\tfma.rn.f64 %fd2, %fd3, %fd3, %fd2;\n\
\t{load}\n\
\tand.b32 %r7, %r5, {exp};\n\tsetp.eq.u32 %p2, %r7, {exp};\n\t@%p2 bra BAD;\n\
\tcvt.f64.f32 %fd4, %f2;\n\tsub.f64 %fd5, %fd4, %fd3;\n\tfma.rn.f64 %fd1, %fd5, %fd5, %fd1;\n\
\tbra NEXT;\n\
BAD:\n\
\tsetp.eq.u32 %p3, %r5, {poison};\n\tselp.u32 %r8, 1, 0, %p3;\n\tadd.u32 %r10, %r10, %r8;\n\
\tselp.u32 %r9, 0, 1, %p3;\n\tadd.u32 %r11, %r11, %r9;\n\
NEXT:\n\
\tadd.u64 %rd5, %rd5, %rd7;\n\tbra LOOP;\n\
DONE:\n\
{reduce}\
\tand.b32 %r18, %r3, 31;\n\tsetp.ne.u32 %p4, %r18, 0;\n\t@%p4 bra END;\n\
\tred.global.add.f64 [%rd4], %fd1;\n\tred.global.add.f64 [%rd4+8], %fd2;\n\
\tcvt.u64.u32 %rd12, %r10;\n\tred.global.add.u64 [%rd4+16], %rd12;\n\
\tcvt.u64.u32 %rd13, %r11;\n\tred.global.add.u64 [%rd4+24], %rd13;\n\
END:\n\tret;\n}}\n"
    )
}

/// The loaded compare kernel of one problem, with the reference output on the device (as
/// f32: every value of a reference output is exact in f32) and the result buffer.
pub(crate) struct GpuCheck {
    kernel: HandKernel,
    reference: CudaSlice<u8>,
    result: CudaSlice<u8>,
    elems: u64,
}

impl GpuCheck {
    /// Loads the kernel for `dtype`, uploads `reference` (the accepted reference output) and
    /// checks the kernel on `written` (which holds that output now, and is overwritten) against
    /// three answers the host knows. `Err` says why the CPU comparison stays.
    pub fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        dtype: DType,
        reference: &[f64],
        written: &CudaSlice<u8>,
    ) -> Result<GpuCheck, String> {
        let kernel = HandKernel::load(ctx, &ptx(dtype), KERNEL)?;
        fn driver(what: &'static str) -> impl Fn(result::DriverError) -> String {
            move |e| format!("{what}: {}", super::error::describe(e))
        }
        let f32s = host::encode(DType::F32, reference);
        let mut dev = alloc(stream, f32s.len(), "reference").map_err(|e| e.to_string())?;
        stream
            .memcpy_htod(&f32s, &mut dev)
            .map_err(driver("reference upload"))?;
        let result = alloc(stream, RESULT_BYTES, "result").map_err(|e| e.to_string())?;
        let check = GpuCheck {
            kernel,
            reference: dev,
            result,
            elems: reference.len() as u64,
        };
        let ref2: f64 = reference.iter().map(|v| v * v).sum();
        let n = check.elems;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(f64::MIN_POSITIVE);
        let cases: [(Option<u8>, &Expect<'_>); 3] = [
            // The reference itself (what `written` holds): no error, nothing missing.
            (None, &|s| {
                s.diff2 == 0.0 && close(s.ref2, ref2) && s.unwritten == 0 && s.non_finite == 0
            }),
            // All poison: every element unwritten, none counted as an error.
            (Some(POISON), &|s| {
                s.diff2 == 0.0 && s.unwritten == n && s.non_finite == 0
            }),
            // All zero: the error is the reference's norm.
            (Some(0), &|s| {
                close(s.diff2, ref2) && s.unwritten == 0 && s.non_finite == 0
            }),
        ];
        for (fill, expect) in cases {
            if let Some(fill) = fill {
                memset(stream, written, written.len(), fill)
                    .map_err(driver("filling the output"))?;
            }
            let sums = check
                .sums(stream, written)
                .map_err(driver("compare kernel"))?;
            if !expect(&sums) {
                return Err(format!(
                    "the compare kernel disagrees with the host on {}: {sums:?}",
                    fill.map_or("the reference".to_string(), |b| format!("bytes {b:#04x}"))
                ));
            }
        }
        Ok(check)
    }

    /// Compares `written` (the candidate's output, after its run) with the reference.
    pub fn compare(
        &self,
        stream: &Arc<CudaStream>,
        written: &CudaSlice<u8>,
    ) -> Result<Comparison, result::DriverError> {
        let s = self.sums(stream, written)?;
        Ok(Comparison::from_sums(
            s.diff2,
            s.ref2,
            s.unwritten,
            s.non_finite,
        ))
    }

    fn sums(
        &self,
        stream: &Arc<CudaStream>,
        written: &CudaSlice<u8>,
    ) -> Result<Sums, result::DriverError> {
        memset(stream, &self.result, RESULT_BYTES, 0)?;
        let res = self.result.device_ptr(stream).0;
        // (out, reference: `elems` elements of the problem's type and as f32; n; 32-byte result)
        let mut args = [
            written.device_ptr(stream).0,
            self.reference.device_ptr(stream).0,
            self.elems,
            res,
        ];
        let blocks = self
            .elems
            .div_ceil(u64::from(THREADS) * PER_THREAD)
            .clamp(1, MAX_BLOCKS) as u32;
        self.kernel.launch(stream, blocks, THREADS, &mut args)?;
        let mut raw = [0u8; RESULT_BYTES];
        stream.memcpy_dtoh(&self.result, &mut raw[..])?;
        stream.synchronize()?;
        let word =
            |i: usize| u64::from_le_bytes(raw[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Ok(Sums {
            diff2: f64::from_bits(word(0)),
            ref2: f64::from_bits(word(1)),
            unwritten: word(2),
            non_finite: word(3),
        })
    }
}

/// What a known output's sums must satisfy (`None` fill: the reference itself).
type Expect<'a> = dyn Fn(&Sums) -> bool + 'a;

/// The kernel's result.
#[derive(Debug)]
struct Sums {
    diff2: f64,
    ref2: f64,
    unwritten: u64,
    non_finite: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel text is well formed enough for the driver: one entry, balanced braces, the
    /// type's exponent mask and poison, and the reductions of all four sums (GPU runs are in
    /// `convtune selfcheck`, whose every candidate goes through it after [`GpuCheck::new`]'s
    /// three known answers).
    #[test]
    fn kernel_text_per_type() {
        for (dtype, exp, poison) in [
            (DType::BF16, "32640", "65535"),
            (DType::F16, "31744", "65535"),
            (DType::F32, "2139095040", "4294967295"),
        ] {
            let t = ptx(dtype);
            assert_eq!(t.matches(".entry").count(), 1);
            assert_eq!(t.matches('{').count(), t.matches('}').count());
            assert!(
                t.contains(&format!("and.b32 %r7, %r5, {exp};")),
                "{dtype:?}"
            );
            assert!(
                t.contains(&format!("setp.eq.u32 %p3, %r5, {poison};")),
                "{dtype:?}"
            );
            assert_eq!(t.matches("red.global.add").count(), 4);
            assert_eq!(t.matches("shfl.sync.bfly.b32").count(), 5 * 6);
        }
    }
}
