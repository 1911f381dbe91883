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

/// Registers the NVPTX, AMDGPU and host backends. LLVM's registries are global and not safe to
/// fill concurrently, so this runs once, whichever thread compiles first.
pub(crate) fn init() {
    INIT.call_once(|| {
        let cfg = InitializationConfig::default();
        LlvmTarget::initialize_nvptx(&cfg);
        LlvmTarget::initialize_amd_gpu(&cfg);
        // The host backend only serves the emulator; a failure shows up there as an error.
        let _ = LlvmTarget::initialize_native(&cfg);
    });
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
