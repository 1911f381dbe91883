//! The HIP calls the tuner makes, as a trait: [`HipLib`](super::HipLib) answers them from
//! `libamdhip64` opened at run time, and a test answers them from host memory to drive the
//! measurer (argument packing, launch order, poisoning, timing) without an AMD GPU.
//!
//! Handles (device pointers, modules, functions, streams, events) are opaque `u64`s: whatever the
//! implementation's pointer is. Every method is safe to call with any handle it returned itself.

/// A HIP error code and its name, as `hipGetErrorName` spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipError {
    /// The `hipError_t` value.
    pub code: i32,
    /// Its name and description.
    pub text: String,
}

impl HipError {
    /// `hipErrorNoDevice`: discovery's "none", not a failure.
    pub const NO_DEVICE: i32 = 100;
    /// `hipErrorInvalidDevice`: what `hipInit` of ROCm 5 answers on a machine without a GPU.
    pub const INVALID_DEVICE: i32 = 101;
    /// `hipErrorOutOfMemory`.
    pub const OUT_OF_MEMORY: i32 = 2;
    /// `hipErrorIllegalAddress`: a memory fault; the context is gone.
    pub const ILLEGAL_ADDRESS: i32 = 700;
    /// `hipErrorLaunchFailure`: a kernel aborted; the context is gone.
    pub const LAUNCH_FAILURE: i32 = 719;

    /// Errors after which the process's HIP context cannot be trusted (HIP 5/6 numbering,
    /// shared with CUDA's: illegal address 700, hardware stack 714, illegal/misaligned/invalid
    /// PC 715-718, launch failure 719, assert 710; `hipErrorLaunchTimeOut` 702).
    pub fn is_sticky(&self) -> bool {
        matches!(self.code, 700 | 702 | 710 | 714..=719)
    }
}

impl std::fmt::Display for HipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (hipError_t {})", self.text, self.code)
    }
}

/// `hipDeviceAttribute_t` values the tuner reads. The numbers are the HIP 5.x headers'
/// (checked against /usr/include/hip of libamdhip64-dev 5.2.3, which this file was written
/// from); ROCm 6 keeps the CUDA-compatible block's numbering, filling retired slots with
/// `Unused` entries rather than renumbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Attr {
    /// Peak core clock, kHz.
    ClockRate = 5,
    /// L2 bytes.
    L2CacheSize = 19,
    /// Threads per block.
    MaxThreadsPerBlock = 56,
    /// Peak memory clock, kHz.
    MemoryClockRate = 60,
    /// Compute units.
    MultiprocessorCount = 63,
    /// LDS bytes one workgroup may use.
    MaxSharedMemoryPerBlock = 74,
    /// Lanes per wavefront.
    WarpSize = 87,
    /// `gcnArch` as a number (major·100 + minor·10 + stepping); the fallback when the name
    /// string cannot be read.
    GcnArch = 10003,
}

/// The calls the measurer and discovery make; see the module documentation.
pub trait HipApi: Send {
    /// `hipRuntimeGetVersion` (`HIP_VERSION` encoding).
    fn runtime_version(&self) -> Result<i32, HipError>;
    /// `hipDriverGetVersion`.
    fn driver_version(&self) -> Result<i32, HipError>;
    /// `hipGetDeviceCount`.
    fn device_count(&self) -> Result<i32, HipError>;
    /// `hipDeviceGetAttribute`.
    fn attribute(&self, attr: Attr, device: i32) -> Result<i32, HipError>;
    /// `hipDeviceGetName`.
    fn device_name(&self, device: i32) -> Result<String, HipError>;
    /// `gcnArchName` of the device properties, e.g. `gfx90a:sramecc+:xnack-`.
    fn arch_name(&self, device: i32) -> Result<String, HipError>;
    /// `hipDeviceTotalMem`.
    fn total_memory(&self, device: i32) -> Result<u64, HipError>;
    /// `hipSetDevice`: later calls on this thread go to `device`.
    fn set_device(&self, device: i32) -> Result<(), HipError>;
    /// `hipMalloc`.
    fn malloc(&self, bytes: usize) -> Result<u64, HipError>;
    /// `hipFree`.
    fn free(&self, ptr: u64) -> Result<(), HipError>;
    /// `hipMemcpyHtoD` (synchronous).
    fn copy_to_device(&self, dst: u64, src: &[u8]) -> Result<(), HipError>;
    /// `hipMemcpyDtoH` (synchronous).
    fn copy_from_device(&self, dst: &mut [u8], src: u64) -> Result<(), HipError>;
    /// `hipMemsetD8Async` on `stream`.
    fn memset(&self, dst: u64, value: u8, bytes: usize, stream: u64) -> Result<(), HipError>;
    /// `hipStreamCreate`.
    fn stream_create(&self) -> Result<u64, HipError>;
    /// `hipStreamSynchronize`.
    fn stream_synchronize(&self, stream: u64) -> Result<(), HipError>;
    /// `hipModuleLoadData` of a linked code object.
    fn module_load(&self, image: &[u8]) -> Result<u64, HipError>;
    /// `hipModuleUnload`.
    fn module_unload(&self, module: u64) -> Result<(), HipError>;
    /// `hipModuleGetFunction`.
    fn function(&self, module: u64, name: &str) -> Result<u64, HipError>;
    /// `hipModuleLaunchKernel` with `kernelParams` pointing at one 64-bit value per argument
    /// (HIP packs them into the kernarg segment at the offsets the code object declares).
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        function: u64,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: u64,
        args: &[u64],
    ) -> Result<(), HipError>;
    /// `hipEventCreate`.
    fn event_create(&self) -> Result<u64, HipError>;
    /// `hipEventRecord` on `stream`.
    fn event_record(&self, event: u64, stream: u64) -> Result<(), HipError>;
    /// `hipEventSynchronize` then `hipEventElapsedTime`: milliseconds from `start` to `stop`.
    fn elapsed_ms(&self, start: u64, stop: u64) -> Result<f32, HipError>;
}
