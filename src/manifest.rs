//! The launch manifest: everything a program outside convtune needs to run a compiled module
//! (`convtune compile --manifest FILE`), as versioned JSON.
//!
//! The module alone is not enough to launch it: which kernels run in which order, with which
//! grid, block and dynamic shared memory, which pointer goes in which parameter, how big the
//! workspace is and whether it must be cleared, and what memory layout each tensor has. The
//! manifest says all of it, so a caller (the `docs/examples/launch_manifest.py` script, a
//! compiler's runtime, a PyTorch extension) never reads convtune's source to find out. The ABI
//! itself is described in `docs/abi.md`; this module is its machine-readable form.
//!
//! Stability: a reader checks [`MANIFEST_VERSION`]; fields may be added within a version,
//! never renamed or removed.
//!
//! ```no_run
//! use convtune::{arch::Arch, codegen::compile_conv, lowering::lower, tune::target_for};
//! use convtune::manifest::{ConfigSource, Manifest};
//! let p = "convbfp16 -n 16 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 --layout NHWC".parse().unwrap();
//! let arch = Arch::from_name("sm_90").unwrap();
//! let cfg = "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1".parse().unwrap();
//! let l = lower(&p);
//! let c = compile_conv(&l, &cfg, target_for(&arch)).unwrap();
//! let m = Manifest::new(&l, &arch, &cfg, ConfigSource::Given, "--config", &c, "k.ptx");
//! println!("{}", serde_json::to_string_pretty(&m).unwrap());
//! ```

use crate::arch::{Arch, Vendor};
use crate::codegen::Compiled;
use crate::config::PerfConfig;
use crate::db::Source;
use crate::lowering::Lowering;
use crate::problem::{ConvProblem, Direction, Tensor};
use crate::runtime::SHARED_OPT_IN_ABOVE;
use serde::{Deserialize, Serialize};

/// The version of the manifest format this build writes.
pub const MANIFEST_VERSION: u32 = 1;

/// A compiled module and how to launch it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`] when written.
    pub manifest_version: u32,
    /// The convtune that wrote it.
    pub convtune_version: String,
    /// The problem's canonical key (the tuned database's key).
    pub problem: String,
    /// `fwd`, `bwd-data` or `bwd-weight`: decides which tensor the kernels write.
    pub direction: String,
    /// Element type of all three tensors: `f32`, `f16` or `bf16`.
    pub dtype: String,
    /// Padding, stride, dilation and groups: with the tensor shapes, the whole convolution
    /// (what a caller checking the result against another library needs).
    pub convolution: ConvParams,
    /// ‖out − ref‖ / ‖ref‖ that convtune itself requires of these kernels against an f64
    /// reference (accumulation is in f32).
    pub tolerance: f64,
    /// The GPU architecture it was compiled for (`sm_90`, `gfx90a`…).
    pub arch: String,
    /// The module file.
    pub module: ModuleInfo,
    /// The tuning parameters and where they came from.
    pub config: ConfigInfo,
    /// The parameters every kernel takes, in order.
    pub arguments: Vec<Argument>,
    /// The scratch buffer (the `workspace` argument).
    pub workspace: Workspace,
    /// Kernels in launch order; run them all, in this order, on one stream.
    pub kernels: Vec<KernelLaunch>,
}

/// The convolution's geometry beyond the tensor shapes; `[h, w]` pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvParams {
    /// Zero padding on each side.
    pub pad: [u32; 2],
    /// Filter stride.
    pub stride: [u32; 2],
    /// Filter dilation.
    pub dilation: [u32; 2],
    /// Groups (the `g` dimension of every tensor).
    pub groups: u32,
}

/// The module file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleInfo {
    /// Where `compile -o` wrote it, as given.
    pub path: String,
    /// How to load it.
    pub kind: ModuleKind,
    /// The exact target inside (`sm_90a` when the kernels use `wgmma`, which only that
    /// arch-specific target runs).
    pub target: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// How a module is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModuleKind {
    /// PTX text: `cuModuleLoadData` (the driver JIT-compiles it for the GPU at hand).
    Ptx,
    /// An AMDGPU code object (ELF): `hipModuleLoadData`.
    CodeObject,
}

/// The config and its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigInfo {
    /// The versioned config string (`v1:…`/`v2:…`), as the tuned database stores it.
    pub text: String,
    /// Where it came from.
    pub source: ConfigSource,
    /// How the lookup found it (which database, what it skipped), or `--config`.
    pub reason: String,
}

/// Where a config came from: a tuned answer or a guess.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ConfigSource {
    /// Tuned for exactly this problem.
    Exact,
    /// Tuned for the nearest problem of the same direction, type and layouts.
    Nearest {
        /// That problem's key.
        key: String,
        /// Its distance (see `db::distance`).
        distance: f64,
    },
    /// The shipped quick list (configs good on most recorded problems).
    QuickList,
    /// The cost model's pick among legal candidates.
    Heuristic,
    /// Given by the caller (`--config`).
    Given,
}

impl From<&Source> for ConfigSource {
    fn from(s: &Source) -> Self {
        match s {
            Source::Exact => ConfigSource::Exact,
            Source::Nearest { key, distance } => ConfigSource::Nearest {
                key: key.clone(),
                distance: *distance,
            },
            Source::QuickList => ConfigSource::QuickList,
            // A lookup that found nothing does not return a config; the heuristic filled in.
            Source::Heuristic | Source::None => ConfigSource::Heuristic,
        }
    }
}

/// One kernel parameter. Every parameter is a 64-bit device pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Argument {
    /// Position in the kernel's parameter list.
    pub index: u32,
    /// `x`, `w`, `y` (the tensors by their forward names) or `workspace`.
    pub name: String,
    /// What it holds in this direction: `x`/`dx`, `w`/`dw`, `y`/`dy`, `workspace`.
    pub meaning: String,
    /// Whether the kernels only read it or also write it.
    pub access: Access,
    /// The tensor's shape and memory layout (absent for the workspace).
    pub tensor: Option<TensorInfo>,
}

/// Read or written by the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Only read: may be shared, may be read-only memory.
    Read,
    /// Written in full by the plan (never accumulated into: its old contents do not matter).
    Write,
    /// Scratch: written and read back by the plan's own kernels.
    Scratch,
}

/// A tensor as the kernels address it: five logical dimensions with element strides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorInfo {
    /// Element type.
    pub dtype: String,
    /// Memory order, outermost first (`NHWGC`, `GKYXC`…).
    pub layout: String,
    /// The logical dimensions `shape` and `strides` follow: `[n, g, c, h, w]` for
    /// activations (c is the channel within a group), `[g, k, c, y, x]` for the filter.
    pub dims: [String; 5],
    /// Extent of each logical dimension.
    pub shape: [u32; 5],
    /// Stride of each logical dimension, in elements (dense: no gaps).
    pub strides: [u64; 5],
    /// Elements in the buffer.
    pub elements: u64,
    /// Bytes in the buffer.
    pub bytes: u64,
}

/// The scratch buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workspace {
    /// Bytes to allocate; 0 means pass a null pointer.
    pub bytes: u64,
    /// Whether the caller must clear it before the first kernel: exactly when
    /// `kept_zero_bytes` is not 0, and clearing the whole buffer before every call is then
    /// always correct. Otherwise, when a plan needs a cleared buffer (split-K accumulating into
    /// an f32 workspace, or into the written tensor itself), its first kernel does the
    /// clearing. convtune checks this on the GPU by poisoning every buffer (but the kept-zero
    /// region, cleared) before verifying a candidate.
    pub must_be_zeroed: bool,
    /// Bytes at the buffer's start that must be zero when the plan starts and that the plan
    /// leaves zero (its split-K fix-up or stream-K counters, [`crate::abi::KEPT_ZERO_BYTES`]);
    /// no plan writes anything else there. A caller that keeps one buffer for such plans
    /// clears these bytes once, when it allocates it. 0: nothing asked.
    #[serde(default)]
    pub kept_zero_bytes: u64,
}

/// One launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLaunch {
    /// The kernel's symbol in the module.
    pub name: String,
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory to pass at launch, bytes (the kernels use no static shared memory).
    pub dynamic_shared_bytes: u32,
    /// Whether the kernel must first be allowed more than 48 KiB of dynamic shared memory
    /// (CUDA: `cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)`;
    /// AMD needs no opt-in).
    pub needs_shared_opt_in: bool,
    /// Parameters after `arguments` that are TMA tensor maps (`ld=tma`/`ld=ws` kernels only):
    /// each a 128-byte `CUtensorMap` passed by value, encoded by the driver call that its
    /// `encode` spells out in full (function and every argument) over the named tensor's
    /// pointer plus `encode.address_offset`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<TensorMapArg>,
    /// Every parameter's place in the kernel's parameter space (offset, size, alignment): the
    /// four pointers at 0, 8, 16, 24, then the tensor maps at multiples of 64. Hand
    /// `cuLaunchKernel` one pointer per parameter into a 64-byte aligned buffer laid out so.
    #[serde(default)]
    pub params: Vec<crate::abi::ParamSlot>,
    /// Blocks per thread-block cluster along x (`cl=2m|2n`: 2), compiled into the kernel
    /// (`.reqnctapercluster`): a plain `cuLaunchKernel` forms the clusters, and `grid[0]` is a
    /// multiple. Left out (1) for kernels without clusters.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cluster_blocks: u32,
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// The tensor-map parameters of a kernel with arguments `args` (its mode in each `map`).
pub fn tensor_map_args(args: &[crate::abi::KernelArg]) -> Vec<TensorMapArg> {
    args.iter()
        .zip(0..)
        .filter_map(|(a, index)| match a.kind {
            crate::abi::ArgKind::TensorMap(map) => Some(TensorMapArg {
                index,
                tensor: a.role.name().to_string(),
                map,
                encode: map.encode_args(),
            }),
            crate::abi::ArgKind::DevicePtr => None,
        })
        .collect()
}

/// One tensor-map parameter of a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorMapArg {
    /// Parameter index (after the pointer arguments).
    pub index: u32,
    /// The tensor whose memory it describes (`x`, `w`, `y`).
    pub tensor: String,
    /// What to encode.
    pub map: crate::abi::TensorMapSpec,
    /// The driver call that encodes it ([`crate::abi::TensorMapSpec::encode_args`]).
    pub encode: crate::abi::TensorMapEncode,
}

/// What a kernel parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Param {
    /// One of the three tensors.
    Tensor(Tensor),
    /// The scratch buffer.
    Workspace,
}

/// The kernels' parameters in order, from the one ABI declaration ([`crate::abi::CONV_ARGS`]).
fn parameters() -> Vec<Param> {
    crate::abi::CONV_ARGS
        .iter()
        .map(|a| a.role.tensor().map_or(Param::Workspace, Param::Tensor))
        .collect()
}

impl Manifest {
    /// The manifest of `compiled` (written to `module_path`), built for `lowering` on `arch`
    /// with `config`.
    pub fn new(
        lowering: &Lowering,
        arch: &Arch,
        config: &PerfConfig,
        source: ConfigSource,
        reason: &str,
        compiled: &Compiled,
        module_path: &str,
    ) -> Manifest {
        let p = &lowering.problem;
        let (kind, bytes, target) = match &compiled.module {
            crate::abi::Module::Ptx(ptx) => (
                ModuleKind::Ptx,
                ptx.len() as u64,
                ptx_target(ptx).unwrap_or_else(|| compiled.target.to_string()),
            ),
            crate::abi::Module::CodeObject(co) => (
                ModuleKind::CodeObject,
                co.len() as u64,
                compiled.target.to_string(),
            ),
        };
        let opt_in = |shared: u32| arch.vendor == Vendor::Nvidia && shared > SHARED_OPT_IN_ABOVE;
        Manifest {
            manifest_version: MANIFEST_VERSION,
            convtune_version: env!("CARGO_PKG_VERSION").to_string(),
            problem: p.key(),
            direction: p.direction().name().to_string(),
            dtype: p.dtype().name().to_string(),
            convolution: ConvParams {
                pad: p.sizes().pad,
                stride: p.sizes().stride,
                dilation: p.sizes().dilation,
                groups: p.sizes().groups,
            },
            tolerance: p.tolerance(),
            arch: arch.name.to_string(),
            module: ModuleInfo {
                path: module_path.to_string(),
                kind,
                target,
                bytes,
            },
            config: ConfigInfo {
                text: config.to_string(),
                source,
                reason: reason.to_string(),
            },
            arguments: parameters()
                .iter()
                .zip(0..)
                .map(|(param, index)| argument(p, *param, index))
                .collect(),
            workspace: Workspace {
                bytes: compiled.workspace_bytes,
                must_be_zeroed: compiled.kept_zero > 0,
                kept_zero_bytes: compiled.kept_zero,
            },
            kernels: compiled
                .kernels
                .iter()
                .map(|k| KernelLaunch {
                    name: k.name.clone(),
                    grid: k.grid,
                    block: k.block,
                    dynamic_shared_bytes: k.shared_bytes,
                    needs_shared_opt_in: opt_in(k.shared_bytes),
                    tensor_maps: tensor_map_args(&k.args),
                    params: crate::abi::param_layout(&k.args).slots,
                    cluster_blocks: k.cluster,
                })
                .collect(),
        }
    }
}

/// The `.target` directive of a PTX module (`sm_90a` for wgmma kernels).
fn ptx_target(ptx: &str) -> Option<String> {
    let line = ptx
        .lines()
        .find(|l| l.trim_start().starts_with(".target"))?;
    let first = line
        .trim_start()
        .trim_start_matches(".target")
        .split(',')
        .next()?;
    Some(first.trim().to_string())
}

fn argument(p: &ConvProblem, param: Param, index: u32) -> Argument {
    let Param::Tensor(t) = param else {
        return Argument {
            index,
            name: "workspace".into(),
            meaning: "workspace".into(),
            access: Access::Scratch,
            tensor: None,
        };
    };
    let name = match t {
        Tensor::Input => "x",
        Tensor::Filter => "w",
        Tensor::Output => "y",
    };
    let written = p.direction().written() == t;
    let gradient = match p.direction() {
        Direction::Fwd => false,
        Direction::BwdData => t != Tensor::Filter,
        Direction::BwdWeight => t != Tensor::Input,
    };
    let layout = p.layout(t);
    let dims = match t {
        Tensor::Filter => ["g", "k", "c", "y", "x"],
        Tensor::Input | Tensor::Output => ["n", "g", "c", "h", "w"],
    };
    let elements = p.tensor_elems(t);
    Argument {
        index,
        name: name.into(),
        meaning: if gradient {
            format!("d{name}")
        } else {
            name.into()
        },
        access: if written { Access::Write } else { Access::Read },
        tensor: Some(TensorInfo {
            dtype: p.dtype().name().into(),
            layout: layout.to_string(),
            dims: dims.map(String::from),
            shape: p.logical_dims(t),
            strides: p.strides(t),
            elements,
            bytes: elements * u64::from(p.dtype().bytes()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::launches;
    use crate::lowering::lower;
    use crate::tune::target_for;

    /// A manifest from the launch plan alone (no LLVM), as `compile` would write it.
    fn manifest(problem: &str, cfg: &str, arch: &str) -> Manifest {
        let p: ConvProblem = problem.parse().unwrap();
        let cfg: PerfConfig = cfg.parse().unwrap();
        let arch = Arch::from_name(arch).unwrap();
        let l = lower(&p);
        let target = target_for(&arch);
        let planned = launches(&l, &cfg, target).unwrap();
        let c = Compiled {
            target,
            module: crate::abi::Module::Ptx(".version 8.5\n.target sm_90a\n".into()),
            kernels: planned.kernels,
            workspace_bytes: planned.workspace_bytes,
            kept_zero: planned.kept_zero,
            resources: None,
            steps: Default::default(),
        };
        Manifest::new(&l, &arch, &cfg, ConfigSource::Given, "test", &c, "k.ptx")
    }

    #[test]
    fn nhwc_strides_and_roles_of_a_bwd_data_problem() {
        let m = manifest(
            "convbfp16 -n 2 -c 8 -H 5 -W 6 -k 16 -y 1 -x 1 -u 2 -v 2 -F 2 --layout NHWC",
            "v1:bm=32,bn=32,bk=32,wm=16,wn=16,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1",
            "sm_90",
        );
        assert_eq!(m.manifest_version, 1);
        assert_eq!(m.convolution.stride, [2, 2]);
        assert_eq!(m.module.target, "sm_90a");
        let names: Vec<_> = m.arguments.iter().map(|a| a.meaning.as_str()).collect();
        assert_eq!(names, ["dx", "w", "dy", "workspace"]);
        let dx = m.arguments[0].tensor.as_ref().unwrap();
        assert_eq!(m.arguments[0].access, Access::Write);
        assert_eq!(m.arguments[2].access, Access::Read);
        assert_eq!(dx.shape, [2, 1, 8, 5, 6]);
        // NHWGC: c is contiguous, then g, w, h, n.
        assert_eq!(dx.strides, [5 * 6 * 8, 8, 1, 6 * 8, 8]);
        assert_eq!(dx.bytes, 2 * 8 * 5 * 6 * 2);
        // A 1×1 filter at stride 2 leaves three of four input pixels untouched by any GEMM:
        // the one launch of strided bwd-data runs the GEMM and clears those pixels.
        let names: Vec<_> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["convtune_phases"]);
    }

    #[test]
    fn tma_kernels_carry_their_encode_calls_and_parameter_offsets() {
        // An ld=tma config of seed 003 (shipped in session 6) on an odd width: a tiled map of
        // the filter, an im2col map of dy (whose last column pair reads past its 255 pixels; on
        // seed 003's even width dy is a plain matrix, tiled, see the next test).
        let m = manifest(
            "convbfp16 -n 16 -c 2048 -H 1 -W 511 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
            "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma",
            "sm_90",
        );
        let k = &m.kernels[0];
        let functions: Vec<_> = k
            .tensor_maps
            .iter()
            .map(|t| (t.index, t.tensor.as_str(), t.encode.function.name()))
            .collect();
        assert_eq!(
            functions,
            [
                (4, "w", "cuTensorMapEncodeTiled"),
                (5, "y", "cuTensorMapEncodeIm2col")
            ]
        );
        for t in &k.tensor_maps {
            assert_eq!(t.encode, t.map.encode_args());
        }
        let w = &k.tensor_maps[0].encode;
        assert_eq!(
            (&w.global_dim[..2], w.global_strides[0]),
            (&[4096, 2048][..], 8192)
        );
        assert_eq!(&w.box_dim[..2], &[64, 64]);
        let y = &k.tensor_maps[1].encode;
        assert_eq!((y.channels_per_pixel, y.pixels_per_column), (64, 128));
        let offsets: Vec<_> = k
            .params
            .iter()
            .map(|p| (p.offset, p.kind.as_str()))
            .collect();
        assert_eq!(
            offsets,
            [
                (0, "device-pointer"),
                (8, "device-pointer"),
                (16, "device-pointer"),
                (24, "device-pointer"),
                (64, "tensor-map"),
                (192, "tensor-map")
            ]
        );
        let text = serde_json::to_string(&m).unwrap();
        assert!(
            text.contains(r#""function":"cuTensorMapEncodeIm2col""#),
            "{text}"
        );
        let back: Manifest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    /// Seed 003 itself: its GEMM columns are dy's pixels exactly (256 a row), so dy is the
    /// plain [n·wo][k] matrix and both maps are tiled.
    #[test]
    fn seed_003_loads_dy_as_a_plain_matrix() {
        let m = manifest(
            "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
            "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma",
            "sm_90",
        );
        let maps: Vec<_> = m.kernels[0]
            .tensor_maps
            .iter()
            .map(|t| (t.tensor.as_str(), t.encode.function.name()))
            .collect();
        assert_eq!(
            maps,
            [
                ("w", "cuTensorMapEncodeTiled"),
                ("y", "cuTensorMapEncodeTiled")
            ]
        );
    }

    #[test]
    fn split_k_workspace_is_cleared_by_the_plan_and_opt_in_follows_the_limit() {
        let m = manifest(
            "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1",
            "sm_90",
        );
        assert_eq!(m.workspace.bytes, 64 * 64 * 9 * 4, "f32 partial sums of dw");
        assert!(!m.workspace.must_be_zeroed);
        assert_eq!(m.workspace.kept_zero_bytes, 0);
        let names: Vec<_> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            ["convtune_zero", "convtune_gemm0", "convtune_splitk_finish"]
        );
        for k in &m.kernels {
            assert_eq!(
                k.needs_shared_opt_in,
                k.dynamic_shared_bytes > SHARED_OPT_IN_ABOVE
            );
        }
        let text = serde_json::to_string(&m).unwrap();
        let back: Manifest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn a_fixup_plan_asks_for_the_kept_zero_region_and_has_no_clearing_launch() {
        let m = manifest(
            "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "v3:bm=64,bn=64,bk=32,wm=32,wn=32,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1,mma=sync,red=fixup,ld=cp",
            "sm_90",
        );
        assert_eq!(m.workspace.kept_zero_bytes, crate::abi::KEPT_ZERO_BYTES);
        assert!(m.workspace.must_be_zeroed);
        assert!(m.workspace.bytes > crate::abi::KEPT_ZERO_BYTES);
        let names: Vec<_> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["convtune_gemm0"]);
    }
}
