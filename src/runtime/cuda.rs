//! The thin layer over the CUDA driver for what cudarc's safe API does not cover here: loading a
//! PTX module with the JIT's error log, reading kernel attributes, opting kernels in to large
//! shared memory, and launching a [`LaunchPlan`].
//!
//! cudarc's safe `load_module` sits behind its `nvrtc` feature and throws the PTX JIT log away;
//! a tuner that feeds generated PTX needs that log, so modules are loaded here with
//! `cuModuleLoadDataEx` and unloaded by [`Module`]'s `Drop`, which records errors in the context
//! rather than panicking.

use super::error::{describe, RuntimeError};
use super::plan::{KernelResources, Launch, LaunchPlan};
use super::tensor_map;
use crate::abi::{ArgKind, ArgRole};
use crate::arch::MAX_GRID;
use cudarc::driver::{
    result::{self, DriverError},
    sys::{self, CUfunction_attribute as FnAttr, CUjit_option as Jit},
    CudaContext, CudaSlice, CudaStream, DevicePtr,
};
use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::plan::SHARED_OPT_IN_ABOVE as DEFAULT_SHARED_LIMIT;
/// Room for the PTX JIT's error log.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// A loaded module; unloaded when dropped.
pub(crate) struct Module {
    raw: sys::CUmodule,
    ctx: Arc<CudaContext>,
}

// SAFETY: a CUmodule belongs to its context, not to a thread: the driver API is thread-safe and
// every use binds the context first (`load`, `drop`); function handles are read from it while
// the module is alive. The preloader loads modules on its threads and the measurer uses them
// on its own.
unsafe impl Send for Module {}
// SAFETY: as above; `&Module` only reads the handle.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: `raw` came from cuModuleLoadDataEx and is unloaded exactly once, here.
        self.ctx
            .record_err(unsafe { result::module::unload(self.raw) });
    }
}

impl Module {
    /// JIT-compiles and loads PTX text. The error message carries the JIT's log.
    pub fn load(ctx: &Arc<CudaContext>, ptx: &str) -> Result<Module, String> {
        let image = CString::new(ptx).map_err(|_| "module text contains a NUL byte".to_string())?;
        Self::load_image(ctx, image.as_bytes_with_nul())
    }

    /// Loads machine code that `ptxas` made (a cubin: an ELF image, no JIT).
    pub fn load_cubin(ctx: &Arc<CudaContext>, cubin: &[u8]) -> Result<Module, String> {
        if !cubin.starts_with(b"\x7fELF") {
            return Err("the assembled module is not an ELF image".into());
        }
        Self::load_image(ctx, cubin)
    }

    /// `cuModuleLoadDataEx` on a NUL-terminated PTX text or an ELF image.
    fn load_image(ctx: &Arc<CudaContext>, image: &[u8]) -> Result<Module, String> {
        ctx.bind_to_thread().map_err(describe)?;
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            Jit::CU_JIT_ERROR_LOG_BUFFER,
            Jit::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads the size option's *value* from the pointer slot itself.
        let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut raw = std::ptr::null_mut();
        // SAFETY: `image` is NUL-terminated PTX or an ELF image (whose header gives its size);
        // option arrays have matching lengths; `log` outlives the call and its size is passed
        // alongside.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut raw,
                image.as_ptr() as *const c_void,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        match r.result() {
            Ok(()) => Ok(Module {
                raw,
                ctx: ctx.clone(),
            }),
            Err(e) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]);
                let text = text.trim();
                Err(if text.is_empty() {
                    format!("cuModuleLoadDataEx: {}", describe(e))
                } else {
                    format!("cuModuleLoadDataEx: {}\n{text}", describe(e))
                })
            }
        }
    }

    /// A kernel of this module by symbol name.
    pub(crate) fn function(&self, name: &str) -> Result<sys::CUfunction, String> {
        let c_name = CString::new(name).map_err(|_| format!("kernel name {name:?} has a NUL"))?;
        // SAFETY: the module is loaded for as long as `self` lives.
        unsafe { result::module::get_function(self.raw, c_name) }
            .map_err(|e| format!("kernel `{name}` not found in module: {}", describe(e)))
    }
}

/// A plan whose module is loaded and whose kernels are resolved, ready to launch.
pub(crate) struct LoadedPlan {
    /// Per launch, in launch order: the function handle and its index in `resources`.
    functions: Vec<(sys::CUfunction, usize)>,
    launches: Vec<Launch>,
    /// One entry per distinct kernel, in order of first launch.
    pub resources: Vec<KernelResources>,
    // Declared last: dropped after the handles that point into it (shared with the preloader
    // while another candidate with the same text is still to come).
    _module: Arc<Module>,
}

/// Why a plan cannot be launched: the module is bad, or a launch breaks a limit.
pub(crate) enum PlanError {
    /// Maps to `Outcome::LoadFailed`.
    Load(String),
    /// Maps to `Outcome::LaunchFailed`.
    Launch(String),
}

fn attribute(f: sys::CUfunction, a: FnAttr, kernel: &str) -> Result<u32, String> {
    // SAFETY: `f` is a live function handle of a loaded module.
    unsafe { result::function::get_function_attribute(f, a) }
        .map(|v| v.max(0) as u32)
        .map_err(|e| format!("cuFuncGetAttribute({a:?}) on `{kernel}`: {}", describe(e)))
}

impl LoadedPlan {
    /// Loads the module and resolves every kernel, reading its resources; checks no limits yet.
    pub fn load(ctx: &Arc<CudaContext>, plan: &LaunchPlan) -> Result<LoadedPlan, PlanError> {
        LoadedPlan::load_with(plan, |ptx| Module::load(ctx, ptx).map(Arc::new))
    }

    /// [`LoadedPlan::load`] with the module from `module` (the preloader's, or loaded now).
    pub fn load_with(
        plan: &LaunchPlan,
        module: impl FnOnce(&str) -> Result<Arc<Module>, String>,
    ) -> Result<LoadedPlan, PlanError> {
        if plan.launches.is_empty() {
            return Err(PlanError::Load("plan has no launches".into()));
        }
        let ptx = plan.module.ptx().ok_or_else(|| {
            PlanError::Load(format!(
                "the CUDA runtime loads PTX; this plan holds a {}",
                plan.module.kind()
            ))
        })?;
        // Every tensor map must be one the driver encodes (see `launch`).
        for l in &plan.launches {
            for a in &l.args {
                if let ArgKind::TensorMap(m) = &a.kind {
                    tensor_map::check(m)
                        .map_err(|e| PlanError::Load(format!("kernel `{}`: {e}", l.name)))?;
                }
            }
        }
        let module = module(ptx).map_err(PlanError::Load)?;
        let mut functions = Vec::with_capacity(plan.launches.len());
        let mut resources: Vec<KernelResources> = Vec::new();
        for l in &plan.launches {
            let f = module.function(&l.name).map_err(PlanError::Load)?;
            if let Some(k) = resources.iter().position(|r| r.name == l.name) {
                functions.push((f, k));
                continue;
            }
            functions.push((f, resources.len()));
            let get = |a| attribute(f, a, &l.name).map_err(PlanError::Load);
            resources.push(KernelResources {
                name: l.name.clone(),
                registers: get(FnAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
                local_bytes: get(FnAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
                static_shared_bytes: get(FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                max_threads_per_block: get(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            });
        }
        Ok(LoadedPlan {
            functions,
            launches: plan.launches.clone(),
            resources,
            _module: module,
        })
    }

    /// Checks every launch against the kernel's and the device's limits and opts kernels in to
    /// more than 48 KiB of dynamic shared memory. A broken limit is reported here, by name,
    /// rather than as the driver's bare `CUDA_ERROR_INVALID_VALUE` at launch.
    pub fn prepare(&self, max_shared_optin: u32) -> Result<(), PlanError> {
        for (l, &(f, k)) in self.launches.iter().zip(&self.functions) {
            check_launch(l, &self.resources[k], max_shared_optin).map_err(PlanError::Launch)?;
            if l.shared_bytes > DEFAULT_SHARED_LIMIT {
                // The largest request of this kernel wins, in case it launches more than once.
                let most = self
                    .launches
                    .iter()
                    .filter(|o| o.name == l.name)
                    .map(|o| o.shared_bytes)
                    .max()
                    .unwrap_or(l.shared_bytes);
                // SAFETY: live function handle.
                unsafe {
                    result::function::set_function_attribute(
                        f,
                        FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        most as i32,
                    )
                }
                .map_err(|e| {
                    PlanError::Launch(format!(
                        "kernel `{}`: opting in to {most} bytes of shared memory: {}",
                        l.name,
                        describe(e)
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// Enqueues every launch on `stream`, each with its declared arguments, the device pointer
    /// of a role given by `pointer`. Returns the index of the launch that the driver refused,
    /// with its error.
    pub fn launch(
        &self,
        stream: &CudaStream,
        pointer: &dyn Fn(ArgRole) -> u64,
    ) -> Result<(), (usize, DriverError)> {
        for (i, (l, &(f, _))) in self.launches.iter().zip(&self.functions).enumerate() {
            // Device pointers by value; tensor maps encoded over their tensor's pointer (host
            // work of a microsecond or two, hidden behind the launches in flight).
            let mut ptrs: Vec<u64> = Vec::with_capacity(l.args.len());
            let mut maps: Vec<sys::CUtensorMap> = Vec::new();
            for a in &l.args {
                ptrs.push(pointer(a.role));
                if let ArgKind::TensorMap(m) = &a.kind {
                    maps.push(tensor_map::encode(m, pointer(a.role)).map_err(|e| (i, e))?);
                }
            }
            let mut next_map = maps.iter_mut();
            let mut params: Vec<*mut c_void> = Vec::with_capacity(l.args.len());
            for (a, p) in l.args.iter().zip(ptrs.iter_mut()) {
                params.push(match a.kind {
                    ArgKind::DevicePtr => p as *mut u64 as *mut c_void,
                    ArgKind::TensorMap(_) => match next_map.next() {
                        Some(m) => m as *mut sys::CUtensorMap as *mut c_void,
                        None => unreachable!("one map was encoded per tensor-map argument"),
                    },
                });
            }
            // SAFETY: the kernel takes the plan's declared arguments: u64 device pointers, each
            // pointing to a live allocation of the sizes the problem and plan ask for, and
            // 128-byte tensor maps (64-byte aligned values) encoded over those allocations;
            // the driver copies the parameter values before returning.
            unsafe {
                result::launch_kernel(
                    f,
                    (l.grid[0], l.grid[1], l.grid[2]),
                    (l.block[0], l.block[1], l.block[2]),
                    l.shared_bytes,
                    stream.cu_stream(),
                    &mut params,
                )
            }
            .map_err(|e| (i, e))?;
        }
        Ok(())
    }

    /// The launch at `index`, for error messages.
    pub fn describe_launch(&self, index: usize) -> String {
        match self.launches.get(index) {
            Some(l) => format!(
                "launch {index} (`{}`, grid {:?}, block {:?}, {} B shared)",
                l.name, l.grid, l.block, l.shared_bytes
            ),
            None => format!("launch {index}"),
        }
    }
}

/// The limits a launch must respect, checked before the driver sees it.
pub(crate) fn check_launch(
    l: &Launch,
    r: &KernelResources,
    max_shared_optin: u32,
) -> Result<(), String> {
    if l.grid.contains(&0) || l.block.contains(&0) {
        return Err(format!(
            "kernel `{}`: empty grid {:?} or block {:?}",
            l.name, l.grid, l.block
        ));
    }
    if l.grid.iter().zip(MAX_GRID).any(|(&g, m)| g > m) {
        return Err(format!(
            "kernel `{}`: grid {:?} exceeds the limits {MAX_GRID:?}",
            l.name, l.grid
        ));
    }
    if l.threads() > r.max_threads_per_block as u64 {
        return Err(format!(
            "kernel `{}`: block {:?} has {} threads; at {} registers per thread at most {} fit",
            l.name,
            l.block,
            l.threads(),
            r.registers,
            r.max_threads_per_block
        ));
    }
    let shared = l.shared_bytes as u64 + r.static_shared_bytes as u64;
    if shared > max_shared_optin as u64 {
        return Err(format!(
            "kernel `{}`: {} bytes of shared memory ({} dynamic + {} static) exceed the device's \
             {max_shared_optin} per block",
            l.name, shared, l.shared_bytes, r.static_shared_bytes
        ));
    }
    Ok(())
}

/// One kernel of a small hand-written PTX module that the measurer runs itself (the output
/// check, the L2 sweep): the module, its function, and a launch whose arguments are all u64
/// values (device pointers and counts).
pub(crate) struct HandKernel {
    function: sys::CUfunction,
    // Declared last: dropped after the function handle that points into it.
    _module: Module,
}

// SAFETY: the function handle belongs to the module held beside it (see `Module`); the measurer
// launches it from its own thread only.
unsafe impl Send for HandKernel {}

impl HandKernel {
    /// JIT-compiles `ptx` and finds `name` in it.
    pub fn load(ctx: &Arc<CudaContext>, ptx: &str, name: &str) -> Result<HandKernel, String> {
        let module = Module::load(ctx, ptx)?;
        let function = module.function(name)?;
        Ok(HandKernel {
            function,
            _module: module,
        })
    }

    /// Enqueues the kernel on `stream` over `blocks` × `threads` with these u64 arguments.
    pub fn launch(
        &self,
        stream: &CudaStream,
        blocks: u32,
        threads: u32,
        args: &mut [u64],
    ) -> Result<(), DriverError> {
        let mut params: Vec<*mut c_void> = args
            .iter_mut()
            .map(|p| p as *mut u64 as *mut c_void)
            .collect();
        // SAFETY: every caller's kernel takes exactly these u64 parameters, each a live device
        // allocation's pointer (of the sizes its kernel reads) or a count; the driver copies the
        // parameter values before returning.
        unsafe {
            result::launch_kernel(
                self.function,
                (blocks, 1, 1),
                (threads, 1, 1),
                0,
                stream.cu_stream(),
                &mut params,
            )
        }
    }
}

/// A device buffer of `bytes` (at least 1) for `what`, allocated on `stream`.
pub(crate) fn alloc(
    stream: &Arc<CudaStream>,
    bytes: usize,
    what: &str,
) -> Result<CudaSlice<u8>, RuntimeError> {
    // SAFETY: u8 has no invalid bit patterns; every buffer is written before it is read.
    unsafe { stream.alloc::<u8>(bytes.max(1)) }
        .map_err(|e| RuntimeError::driver("cuMemAllocAsync", format!("{what}, {bytes} bytes"), e))
}

/// Fills the first `bytes` of `buf` with `value`, on `stream`.
pub(crate) fn memset(
    stream: &CudaStream,
    buf: &CudaSlice<u8>,
    bytes: usize,
    value: u8,
) -> Result<(), DriverError> {
    let ptr = buf.device_ptr(stream).0;
    // SAFETY: `bytes` ≤ the buffer's length (callers pass its length or a prefix of it).
    unsafe { result::memset_d8_async(ptr, value, bytes.min(buf.len()), stream.cu_stream()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::CONV_ARGS;

    fn launch(grid: [u32; 3], block: [u32; 3], shared_bytes: u32) -> Launch {
        Launch {
            name: "k".into(),
            grid,
            block,
            shared_bytes,
            args: CONV_ARGS.to_vec(),
        }
    }

    fn res(max_threads: u32, static_shared: u32) -> KernelResources {
        KernelResources {
            name: "k".into(),
            registers: 128,
            local_bytes: 0,
            static_shared_bytes: static_shared,
            max_threads_per_block: max_threads,
        }
    }

    #[test]
    fn launch_limits_are_checked_with_reasons() {
        let optin = 227 * 1024;
        assert!(check_launch(
            &launch([8, 4, 1], [256, 1, 1], 64 * 1024),
            &res(512, 0),
            optin
        )
        .is_ok());
        let e = check_launch(&launch([8, 4, 1], [32, 32, 1], 0), &res(512, 0), optin).unwrap_err();
        assert!(
            e.contains("1024 threads") && e.contains("128 registers"),
            "{e}"
        );
        let e = check_launch(
            &launch([1, 1, 1], [128, 1, 1], optin),
            &res(1024, 16),
            optin,
        )
        .unwrap_err();
        assert!(e.contains("shared memory"), "{e}");
        let e = check_launch(&launch([1, 0, 1], [128, 1, 1], 0), &res(1024, 0), optin).unwrap_err();
        assert!(e.contains("empty grid"), "{e}");
        let e =
            check_launch(&launch([1, 70000, 1], [128, 1, 1], 0), &res(1024, 0), optin).unwrap_err();
        assert!(e.contains("exceeds"), "{e}");
    }
}
