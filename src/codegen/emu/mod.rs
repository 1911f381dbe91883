//! Running the generated kernels on the CPU, to check the code generator without a GPU.
//!
//! The kernels of a candidate are emitted by the same code as for the GPU, with a host
//! [`TargetSpec`](super::spec::TargetSpec) that imitates one GPU (`like`): its warp size,
//! matrix instruction and async copies. They are optimised, JIT-compiled, and run block by
//! block, one OS thread per GPU thread (see `runtime.rs` for what is emulated and how). The
//! report lists every out-of-bounds or misaligned access; the written tensor comes back for
//! comparison with [`crate::reference::direct_conv`].
//!
//! Only small problems are practical: every GPU thread is an OS thread.
//!
//! ```no_run
//! use convtune::arch::Arch;
//! use convtune::codegen::{emu::emulate_conv, Target};
//! use convtune::lowering::lower;
//! use convtune::problem::Tensor;
//! let p: convtune::problem::ConvProblem = "conv -n 1 -c 8 -H 5 -W 5 -k 8 -y 3 -x 3 -p 1 -q 1".parse().unwrap();
//! let cfg = "v1:bm=32,bn=32,bk=8,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1".parse().unwrap();
//! let mut t = Tensor::ALL.map(|t| vec![0.5; p.tensor_elems(t) as usize]);
//! let report = emulate_conv(&lower(&p), &cfg, Target::of(Arch::SM_90), &mut t).unwrap();
//! assert!(report.violations == 0);
//! ```

mod call;
mod cluster;
mod im2col;
mod pipeline;
mod runtime;
pub(crate) mod spec;
mod sync;
mod tma;
mod tma_store;
mod wgmma;

use super::compile::{self, guarded, Job, Launches};
use super::{machine, CodegenError, Kernel, Target};
use crate::abi::{ArgKind, CONV_ARGS};
use crate::config::PerfConfig;
use crate::lowering::Lowering;
use crate::problem::{ConvProblem, DType, Tensor};
use inkwell::context::Context;
use inkwell::OptimizationLevel;
use runtime::{Block, Thread, Violations};
use std::sync::Mutex;

/// What an emulated run did.
#[derive(Debug, Clone, Default)]
pub struct EmuReport {
    /// The launches run, in order.
    pub kernels: Vec<Kernel>,
    /// Scratch bytes the kernels used.
    pub workspace_bytes: u64,
    /// Bad accesses and protocol errors (pending copies at exit); 0 for a correct kernel.
    pub violations: usize,
    /// The first few violations, in words.
    pub messages: Vec<String>,
}

/// Runs every kernel of a candidate, as compiled for a GPU like `like`, on `tensors` (values
/// in the tensors' layouts, rounded to the problem's type on the way in). The written tensor
/// is poisoned with NaN first and holds the kernels' result afterwards.
pub fn emulate_conv(
    lowering: &Lowering,
    cfg: &PerfConfig,
    like: Target,
    tensors: &mut [Vec<f64>; 3],
) -> Result<EmuReport, CodegenError> {
    run(
        Job::Conv {
            lowering,
            cfg,
            fault: false,
        },
        &lowering.problem,
        like,
        tensors,
    )
}

/// [`emulate_conv`] of the kernels [`super::compile_faulting`] builds: the report must show
/// the out-of-bounds store.
pub fn emulate_faulting(
    lowering: &Lowering,
    cfg: &PerfConfig,
    like: Target,
    tensors: &mut [Vec<f64>; 3],
) -> Result<EmuReport, CodegenError> {
    run(
        Job::Conv {
            lowering,
            cfg,
            fault: true,
        },
        &lowering.problem,
        like,
        tensors,
    )
}

/// Runs the reference kernel of [`super::compile_reference`] on the CPU.
pub fn emulate_reference(
    problem: &ConvProblem,
    like: Target,
    tensors: &mut [Vec<f64>; 3],
) -> Result<EmuReport, CodegenError> {
    run(Job::Reference(problem), problem, like, tensors)
}

/// Storage bits of `v` in `dt` (f32 bits or f16/bf16 bits), as bytes.
fn encode(dt: DType, vals: &[f64]) -> Vec<u128> {
    let mut bytes: Vec<u8> = Vec::with_capacity(vals.len() * 4);
    for &v in vals {
        match dt {
            DType::F32 => bytes.extend((v as f32).to_le_bytes()),
            DType::F16 => bytes.extend(half::f16::from_f64(v).to_le_bytes()),
            DType::BF16 => bytes.extend(half::bf16::from_f64(v).to_le_bytes()),
        }
    }
    to_words(&bytes)
}

fn to_words(bytes: &[u8]) -> Vec<u128> {
    let mut words = vec![0u128; bytes.len().div_ceil(16)];
    for (i, chunk) in bytes.chunks(16).enumerate() {
        let mut w = [0u8; 16];
        w[..chunk.len()].copy_from_slice(chunk);
        words[i] = u128::from_le_bytes(w);
    }
    words
}

fn decode(dt: DType, words: &[u128], n: usize) -> Vec<f64> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let eb = dt.bytes() as usize;
    (0..n)
        .map(|i| {
            let b = &bytes[i * eb..(i + 1) * eb];
            match dt {
                DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
                DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            }
        })
        .collect()
}

/// A 16-byte word repeating `pattern` (little-endian bytes).
fn splat(pattern: &[u8]) -> u128 {
    let mut w = [0u8; 16];
    for (i, b) in w.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
    u128::from_le_bytes(w)
}

/// A JIT-compiled kernel and its tensor maps' descriptions (after `CONV_ARGS`).
struct HostKernel {
    addr: usize,
    maps: Vec<(usize, crate::abi::TensorMapSpec)>,
}

fn run(
    job: Job,
    p: &ConvProblem,
    like: Target,
    tensors: &mut [Vec<f64>; 3],
) -> Result<EmuReport, CodegenError> {
    let spec = spec::HostEmu::new(like);
    let launches = compile::plan(job, &spec)?;
    // The host calls kernels with the buffers in `CONV_ARGS` order, then their tensor maps
    // ([`call`]).
    let mut maps = Vec::new();
    for (k, _) in &launches.kernels {
        let n = CONV_ARGS.len();
        let tail: Option<Vec<_>> = k.args[n.min(k.args.len())..]
            .iter()
            .map(|a| match a.kind {
                ArgKind::TensorMap(m) => Some((a.role as usize, m)),
                ArgKind::DevicePtr => None,
            })
            .collect();
        match tail {
            Some(t)
                if k.args.len() >= n
                    && k.args[..n] == *CONV_ARGS
                    && n + t.len() < call::MAX_PARAMS =>
            {
                maps.push(t)
            }
            _ => {
                return Err(CodegenError::Internal(format!(
                    "emulator: kernel {} takes {:?}, the emulator passes {CONV_ARGS:?} and up \
                     to {} tensor maps",
                    k.name,
                    k.args,
                    call::MAX_PARAMS - n - 1
                )))
            }
        }
    }
    for t in Tensor::ALL {
        let need = p.tensor_elems(t) as usize;
        if tensors[t as usize].len() != need {
            return Err(CodegenError::Internal(format!(
                "emulator: {} has {} values, the problem needs {need}",
                t.name(),
                tensors[t as usize].len()
            )));
        }
    }
    guarded(|| {
        let tm = machine::machine(&spec)?;
        let ctx = Context::create();
        let module = machine::new_module(&ctx, &spec, &tm, "convtune_emu")?;
        compile::emit(&ctx, &module, &spec, &launches);
        machine::optimize(&module, &tm)?;
        let llvm_err = |step: &'static str, message: String| CodegenError::Llvm {
            step,
            module: "convtune_emu".into(),
            message,
        };
        let ee = module
            .create_jit_execution_engine(OptimizationLevel::Default)
            .map_err(|e| llvm_err("creating the JIT", e.to_string()))?;
        for (name, addr) in runtime::symbols()
            .into_iter()
            .chain(wgmma::symbols())
            .chain(tma::symbols())
            .chain(tma_store::symbols())
            .chain(pipeline::symbols())
            .chain(cluster::symbols())
        {
            if let Some(f) = module.get_function(name) {
                ee.add_global_mapping(&f, addr);
            }
        }
        let mut fns = Vec::new();
        for ((k, _), maps) in launches.kernels.iter().zip(maps) {
            let addr = ee
                .get_function_address(&k.name)
                .map_err(|e| llvm_err("JIT lookup", format!("{}: {e}", k.name)))?;
            fns.push(HostKernel { addr, maps });
        }
        Ok(execute(p, &launches, &fns, like, tensors))
    })
}

fn execute(
    p: &ConvProblem,
    launches: &Launches,
    fns: &[HostKernel],
    like: Target,
    tensors: &mut [Vec<f64>; 3],
) -> EmuReport {
    let dt = p.dtype();
    let written = p.direction().written() as usize;
    let mut bufs: Vec<Vec<u128>> = (0..3).map(|i| encode(dt, &tensors[i])).collect();
    let nan = splat(match dt {
        DType::F32 => &[0x00, 0x00, 0xc0, 0x7f],
        DType::F16 => &[0x00, 0x7e],
        DType::BF16 => &[0xc0, 0x7f],
    });
    bufs[written].iter_mut().for_each(|w| *w = nan);
    // The workspace poisoned, but for its kept-zero region, clear as a caller keeps it.
    let kept = (launches.kept_zero.min(launches.workspace_bytes) as usize) / 16;
    let mut ws = vec![u128::MAX; (launches.workspace_bytes as usize).div_ceil(16)];
    ws[..kept].fill(0);
    bufs.push(ws);
    let lens: Vec<usize> = (0..3)
        .map(|i| p.tensor_elems(Tensor::ALL[i]) as usize * dt.bytes() as usize)
        .chain([launches.workspace_bytes as usize])
        .collect();
    let violations = Mutex::new(Violations::default());
    for ((k, _), f) in launches.kernels.iter().zip(fns) {
        let ptrs: Vec<usize> = bufs
            .iter_mut()
            .zip(&lens)
            .map(|(b, &len)| if len == 0 { 0 } else { b.as_mut_ptr() as usize })
            .collect();
        let buffers = [0, 1, 2, 3].map(|i| (ptrs[i], lens[i]));
        let maps: Vec<[u64; tma::MAP_WORDS]> = f
            .maps
            .iter()
            .map(|(role, m)| tma::host_map(m, ptrs[*role]))
            .collect();
        if k.cluster > 1 {
            // The blocks of a cluster run at once (x is the cluster's dimension).
            for z in 0..k.grid[2] {
                for y in 0..k.grid[1] {
                    for first in (0..k.grid[0]).step_by(k.cluster as usize) {
                        let xs: Vec<u32> = (first..(first + k.cluster).min(k.grid[0])).collect();
                        let mut smems: Vec<Vec<u128>> = xs
                            .iter()
                            .map(|_| vec![u128::MAX; (k.shared_bytes as usize).div_ceil(16)])
                            .collect();
                        let blocks = xs
                            .iter()
                            .zip(smems.iter_mut())
                            .map(|(&x, smem)| {
                                Block::new(
                                    k.block[0],
                                    like.warp_size(),
                                    [x, y, z],
                                    smem,
                                    buffers,
                                    &violations,
                                )
                            })
                            .collect();
                        let c = cluster::Cluster::new(blocks);
                        run_cluster(&c, f.addr, &ptrs, &maps);
                    }
                }
            }
            continue;
        }
        for z in 0..k.grid[2] {
            for y in 0..k.grid[1] {
                for x in 0..k.grid[0] {
                    let mut smem = vec![u128::MAX; (k.shared_bytes as usize).div_ceil(16)];
                    let block = Block::new(
                        k.block[0],
                        like.warp_size(),
                        [x, y, z],
                        &mut smem,
                        buffers,
                        &violations,
                    );
                    run_block(&block, f.addr, &ptrs, &maps);
                }
            }
        }
    }
    tensors[written] = decode(
        dt,
        &bufs[written],
        p.tensor_elems(Tensor::ALL[written]) as usize,
    );
    let mut v = violations.into_inner().unwrap_or_else(|e| e.into_inner());
    // The plan's side of the kept-zero contract: what it found clear, it leaves clear.
    let dirty = bufs[3][..kept].iter().filter(|&&w| w != 0).count();
    if dirty > 0 {
        v.count += 1;
        v.messages.push(format!(
            "{dirty} of the kept-zero region's {kept} 16-byte words left non-zero"
        ));
    }
    EmuReport {
        kernels: launches.kernels.iter().map(|(k, _)| k.clone()).collect(),
        workspace_bytes: launches.workspace_bytes,
        violations: v.count,
        messages: v.messages,
    }
}

fn run_block(block: &Block, f: usize, ptrs: &[usize], maps: &[[u64; tma::MAP_WORDS]]) {
    std::thread::scope(|s| {
        for tid in 0..block.threads {
            s.spawn(move || run_thread(Thread::new(tid, block), f, ptrs, maps));
        }
    });
    block.sync.finish(block);
}

/// Runs the blocks of cluster `c` at once.
fn run_cluster(c: &cluster::Cluster, f: usize, ptrs: &[usize], maps: &[[u64; tma::MAP_WORDS]]) {
    std::thread::scope(|s| {
        for (rank, block) in c.blocks.iter().enumerate() {
            for tid in 0..block.threads {
                s.spawn(move || {
                    let mut t = Thread::new(tid, block);
                    t.cluster = Some((c, rank as u32));
                    run_thread(t, f, ptrs, maps)
                });
            }
        }
    });
    for b in &c.blocks {
        b.sync.finish(b);
    }
}

/// Runs the kernel at `f` as thread `t`.
fn run_thread(t: Thread, f: usize, ptrs: &[usize], maps: &[[u64; tma::MAP_WORDS]]) {
    let ctx = &t as *const Thread as *const u8;
    let params: Vec<*const u8> = ptrs[..4]
        .iter()
        .map(|&p| p as *const u8)
        .chain(maps.iter().map(|m| m.as_ptr() as *const u8))
        .chain([ctx])
        .collect();
    // SAFETY: `f` is an emulated kernel taking `CONV_ARGS`, `maps.len()` tensor maps (checked
    // when planned) and the thread context; the pointers are the run's buffers (or null for an
    // empty workspace) and host maps, alive until the scope ends, and every access through
    // them is checked (`emu_guard`, `emu_tma_load`).
    unsafe { call::call(f, &params) };
    t.finish();
}
