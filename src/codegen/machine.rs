//! LLVM plumbing: target initialisation (once per process), modules that start from the
//! target's prelude, the O3 pipeline, and emission of PTX or a linked AMDGPU code object.

use super::spec::TargetSpec;
use super::CodegenError;
use inkwell::{
    context::Context,
    memory_buffer::MemoryBuffer,
    module::Module,
    passes::PassBuilderOptions,
    targets::{
        CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine,
        TargetTriple,
    },
    OptimizationLevel,
};
use std::sync::Once;

static INIT: Once = Once::new();

/// LLVM command-line options, set once for the process before any pass runs (LLVM's options
/// are process-global; LLVM is linked in statically, so they are this copy's own and another
/// LLVM in a host process, Triton's say, is not touched; the codegen cache's key holds this
/// file, so a change here is a new key).
///
/// `-dse-memoryssa-scanlimit=0`: dead-store elimination asks alias analysis, for every store,
/// about each of up to 150 earlier memory writes. The epilogue's shared-memory staging writes
/// use thread-dependent (swizzled) offsets, so each query decomposes two address chains only
/// to answer "may alias": 25–30% of the O3 pipeline's time on Hopper candidates, while on
/// every kernel sampled (the shipped database's winners and random legal configs of ten
/// problems for sm_90, gfx90a and gfx942) it removed nothing: PTX and code objects are
/// byte-identical with and without it (BENCHMARKS.md, "Dead-store elimination").
///
/// `-disable-licm-promotion`: loop-invariant code motion tries to keep memory a loop reads and
/// writes in a register, and to decide it walks MemorySSA over every access of the loop; the
/// main loop's hundreds of shared-memory accesses made that 11–14% of the pipeline, and it
/// never promoted anything here (the accumulators are SSA values from the start): the same
/// byte-identity check holds (BENCHMARKS.md, "LICM's promotion").
const LLVM_OPTIONS: &[&str] = &[
    "convtune",
    "-dse-memoryssa-scanlimit=0",
    "-disable-licm-promotion",
];

/// Registers the NVPTX, AMDGPU and host backends. LLVM's registries are global and not safe to
/// fill concurrently, so this runs once, whichever thread compiles first.
pub(crate) fn init() {
    INIT.call_once(|| {
        let cfg = InitializationConfig::default();
        LlvmTarget::initialize_nvptx(&cfg);
        LlvmTarget::initialize_amd_gpu(&cfg);
        // The host backend only serves the emulator; a failure shows up there as an error.
        let _ = LlvmTarget::initialize_native(&cfg);
        set_llvm_options();
    });
}

/// Hands [`LLVM_OPTIONS`] to LLVM's option parser (once: [`init`] runs this under its `Once`).
fn set_llvm_options() {
    let args: Vec<std::ffi::CString> = LLVM_OPTIONS
        .iter()
        .map(|a| std::ffi::CString::new(*a).expect("option without NUL"))
        .collect();
    let argv: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: `argv` holds `args.len()` valid NUL-terminated strings that outlive the call, and
    // the overview is a valid empty C string; LLVM copies what it keeps.
    unsafe {
        inkwell::llvm_sys::support::LLVMParseCommandLineOptions(
            argv.len() as i32,
            argv.as_ptr(),
            c"".as_ptr(),
        );
    }
}

/// The back end's optimisation level for `vendor` (the IR pipeline is O3 for both).
///
/// NVPTX at `Default` (llc -O2): at `Aggressive` its IR passes run GVN twice where `Default`
/// runs EarlyCSE, ~40% of the back end's CPU; ptxas or the driver's JIT does its own value
/// numbering on the PTX anyway. Of the 39 shipped sm_90 winners 5 get different PTX; on the
/// H200 (session 11, `scripts/session10/tune-cost-ab.sh`, alternating) they ran within ±1%
/// of the `Aggressive` build. AMDGPU stays at `Aggressive`: there the level changes
/// scheduling and registers, which the dry run reports and rejects configs by.
fn codegen_level(vendor: crate::arch::Vendor) -> OptimizationLevel {
    match vendor {
        crate::arch::Vendor::Nvidia => OptimizationLevel::Default,
        crate::arch::Vendor::Amd => OptimizationLevel::Aggressive,
    }
}

/// A target machine for the spec, at [`codegen_level`].
pub(crate) fn machine(spec: &dyn TargetSpec) -> Result<TargetMachine, CodegenError> {
    init();
    let triple = TargetTriple::create(&spec.triple());
    let err = |reason: String| CodegenError::Target {
        target: spec.target().to_string(),
        reason,
    };
    let target = LlvmTarget::from_triple(&triple).map_err(|e| err(e.to_string()))?;
    target
        .create_target_machine(
            &triple,
            &spec.cpu(),
            &spec.features(),
            codegen_level(spec.target().arch().vendor),
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            err(format!(
                "LLVM cannot create a machine for cpu {}",
                spec.cpu()
            ))
        })
}

/// A new module named `name`, holding the spec's prelude, with triple and data layout set.
pub(crate) fn new_module<'ctx>(
    ctx: &'ctx Context,
    spec: &dyn TargetSpec,
    tm: &TargetMachine,
    name: &str,
) -> Result<Module<'ctx>, CodegenError> {
    let text = spec.prelude_ir();
    let buf = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), name);
    let module = ctx
        .create_module_from_ir(buf)
        .map_err(|e| CodegenError::Llvm {
            step: "parsing the target prelude",
            module: name.to_string(),
            message: e.to_string(),
        })?;
    module.set_name(name);
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    Ok(module)
}

/// The pass pipeline [`optimize`] runs (the codegen cache's key names it).
pub(crate) const PIPELINE: &str = "default<O3>";

/// Verifies the module, then runs the O3 pipeline on it.
pub(crate) fn optimize(module: &Module, tm: &TargetMachine) -> Result<(), CodegenError> {
    let name = module.get_name().to_string_lossy().into_owned();
    module.verify().map_err(|e| CodegenError::Verify {
        module: name.clone(),
        message: e.to_string(),
    })?;
    module
        .run_passes(PIPELINE, tm, PassBuilderOptions::create())
        .map_err(|e| CodegenError::Llvm {
            step: "optimisation",
            module: name,
            message: e.to_string(),
        })
}

/// PTX text of an optimised NVPTX module, its `wgmma` waits first in their blocks
/// ([`super::ptx_waits`]).
pub(crate) fn emit_ptx(module: &Module, tm: &TargetMachine) -> Result<String, CodegenError> {
    let buf = tm
        .write_to_memory_buffer(module, FileType::Assembly)
        .map_err(|e| CodegenError::Llvm {
            step: "PTX emission",
            module: module.get_name().to_string_lossy().into_owned(),
            message: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(buf.as_slice());
    Ok(super::ptx_waits::waits_first(text.trim_end_matches('\0')))
}

/// A loadable AMDGPU code object: the object file linked as a shared library by `ld.lld`.
pub(crate) fn emit_code_object(
    module: &Module,
    tm: &TargetMachine,
) -> Result<Vec<u8>, CodegenError> {
    let obj = tm
        .write_to_memory_buffer(module, FileType::Object)
        .map_err(|e| CodegenError::Llvm {
            step: "object emission",
            module: module.get_name().to_string_lossy().into_owned(),
            message: e.to_string(),
        })?;
    link_code_object(obj.as_slice())
}

/// Linkers tried in order: Debian's versioned name, LLVM 19's own directory, then PATH.
pub(crate) const LINKERS: [&str; 3] = ["ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "ld.lld"];

fn link_code_object(obj: &[u8]) -> Result<Vec<u8>, CodegenError> {
    let io = |what: &str, e: std::io::Error| CodegenError::Link(format!("{what}: {e}"));
    let dir = tempfile::tempdir().map_err(|e| io("creating a temporary directory", e))?;
    let (src, dst) = (
        dir.path().join("kernels.o"),
        dir.path().join("kernels.hsaco"),
    );
    std::fs::write(&src, obj).map_err(|e| io("writing the object", e))?;
    for linker in LINKERS {
        let out = std::process::Command::new(linker)
            .arg("-shared")
            .arg(&src)
            .arg("-o")
            .arg(&dst)
            .output();
        match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&format!("running {linker}"), e)),
            Ok(o) if !o.status.success() => {
                return Err(CodegenError::Link(format!(
                    "{linker} failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )))
            }
            Ok(_) => return std::fs::read(&dst).map_err(|e| io("reading the code object", e)),
        }
    }
    Err(CodegenError::Link(
        "no LLVM linker found (tried ld.lld-19, /usr/lib/llvm-19/bin/ld.lld, ld.lld): install lld-19"
            .into(),
    ))
}
