//! `libamdhip64` opened at run time (`dlopen`), so one binary serves machines with CUDA, with
//! ROCm, with both or with neither: nothing links against the HIP runtime at build time.
//!
//! Every signature below was written from the HIP 5.2 headers (`/usr/include/hip/hip_runtime_api.h`
//! of libamdhip64-dev 5.2.3) and checked against the ROCm 6 API: all of these entry points keep
//! their C signatures in 6.x. The one layout that changed is `hipDeviceProp_t`, read only for
//! `gcnArchName`: ROCm 6 exports `hipGetDevicePropertiesR0600` (name at byte 1160) beside the
//! legacy `hipGetDeviceProperties` (R0000 layout, name at byte 396, as in the 5.2 header), so the
//! newer one is used when present and the name must start with `gfx` to be believed.

use super::api::{Attr, HipApi, HipError};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

/// File names tried in order: the development link, then the ROCm 6 and 5 sonames.
pub const LIBRARY_NAMES: [&str; 3] = ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"];

type E = c_int;
type Ptr = *mut c_void;

/// Offsets of `gcnArchName` (256 chars) in the two `hipDeviceProp_t` layouts, and a buffer
/// larger than either struct (R0000: 792 bytes in the 5.2 header; R0600: 1472).
const ARCH_NAME_R0000: usize = 396;
const ARCH_NAME_R0600: usize = 1160;
const PROPS_BYTES: usize = 8192;

/// The function table; the library stays open as long as the table lives.
pub struct HipLib {
    init: unsafe extern "C" fn(c_uint) -> E,
    runtime_get_version: unsafe extern "C" fn(*mut c_int) -> E,
    driver_get_version: unsafe extern "C" fn(*mut c_int) -> E,
    get_error_name: unsafe extern "C" fn(E) -> *const c_char,
    get_error_string: unsafe extern "C" fn(E) -> *const c_char,
    get_device_count: unsafe extern "C" fn(*mut c_int) -> E,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> E,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> E,
    device_total_mem: unsafe extern "C" fn(*mut usize, c_int) -> E,
    get_device_properties: unsafe extern "C" fn(Ptr, c_int) -> E,
    get_device_properties_r0600: Option<unsafe extern "C" fn(Ptr, c_int) -> E>,
    set_device: unsafe extern "C" fn(c_int) -> E,
    malloc: unsafe extern "C" fn(*mut Ptr, usize) -> E,
    free: unsafe extern "C" fn(Ptr) -> E,
    memcpy_htod: unsafe extern "C" fn(Ptr, Ptr, usize) -> E,
    memcpy_dtoh: unsafe extern "C" fn(Ptr, Ptr, usize) -> E,
    memset_d8_async: unsafe extern "C" fn(Ptr, u8, usize, Ptr) -> E,
    stream_create: unsafe extern "C" fn(*mut Ptr) -> E,
    stream_synchronize: unsafe extern "C" fn(Ptr) -> E,
    module_load_data: unsafe extern "C" fn(*mut Ptr, *const c_void) -> E,
    module_unload: unsafe extern "C" fn(Ptr) -> E,
    module_get_function: unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> E,
    #[allow(clippy::type_complexity)]
    module_launch_kernel: unsafe extern "C" fn(
        Ptr,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Ptr,
        *mut Ptr,
        *mut Ptr,
    ) -> E,
    event_create: unsafe extern "C" fn(*mut Ptr) -> E,
    event_record: unsafe extern "C" fn(Ptr, Ptr) -> E,
    event_synchronize: unsafe extern "C" fn(Ptr) -> E,
    event_elapsed_time: unsafe extern "C" fn(*mut f32, Ptr, Ptr) -> E,
    _lib: Library,
}

// SAFETY: the HIP runtime is thread-safe; the table holds only function pointers and the handle.
unsafe impl Send for HipLib {}
unsafe impl Sync for HipLib {}

/// Why the runtime library could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OpenError {
    /// None of [`LIBRARY_NAMES`] could be opened.
    #[error("HIP runtime not found ({}: {reason})", LIBRARY_NAMES.join(", "))]
    NotFound {
        /// The loader's words for the last name tried.
        reason: String,
    },
    /// The library lacks an entry point the tuner calls.
    #[error("{library} lacks {symbol}: {reason}")]
    MissingSymbol {
        /// Which file.
        library: String,
        /// The entry point.
        symbol: String,
        /// The loader's words.
        reason: String,
    },
    /// The runtime loaded but found no AMD GPU (`hipInit` said so: no device, invalid device).
    #[error("the HIP runtime ({library}) found no AMD GPU: hipInit: {error}")]
    NoDevice {
        /// Which file was opened.
        library: String,
        /// HIP's words.
        error: String,
    },
    /// `hipInit` failed otherwise.
    #[error("hipInit ({library}) failed: {error}")]
    Init {
        /// Which file was opened.
        library: String,
        /// HIP's words.
        error: String,
    },
}

impl HipLib {
    /// Opens the first of [`LIBRARY_NAMES`] that loads, resolves every entry point and runs
    /// `hipInit(0)`.
    pub fn open() -> Result<HipLib, OpenError> {
        let mut reason = String::new();
        for name in LIBRARY_NAMES {
            // SAFETY: loading the HIP runtime runs its initialisers, which is what it is for.
            match unsafe { Library::new(name) } {
                Ok(lib) => return HipLib::resolve(lib, name),
                Err(e) => reason = e.to_string(),
            }
        }
        Err(OpenError::NotFound { reason })
    }

    fn resolve(lib: Library, name: &str) -> Result<HipLib, OpenError> {
        macro_rules! sym {
            ($s:literal) => {
                symbol(&lib, name, concat!($s, "\0"))?
            };
        }
        // Absent before ROCm 6.
        let r0600 = symbol(&lib, name, "hipGetDevicePropertiesR0600\0").ok();
        let t = HipLib {
            init: sym!("hipInit"),
            runtime_get_version: sym!("hipRuntimeGetVersion"),
            driver_get_version: sym!("hipDriverGetVersion"),
            get_error_name: sym!("hipGetErrorName"),
            get_error_string: sym!("hipGetErrorString"),
            get_device_count: sym!("hipGetDeviceCount"),
            device_get_attribute: sym!("hipDeviceGetAttribute"),
            device_get_name: sym!("hipDeviceGetName"),
            device_total_mem: sym!("hipDeviceTotalMem"),
            get_device_properties: sym!("hipGetDeviceProperties"),
            get_device_properties_r0600: r0600,
            set_device: sym!("hipSetDevice"),
            malloc: sym!("hipMalloc"),
            free: sym!("hipFree"),
            memcpy_htod: sym!("hipMemcpyHtoD"),
            memcpy_dtoh: sym!("hipMemcpyDtoH"),
            memset_d8_async: sym!("hipMemsetD8Async"),
            stream_create: sym!("hipStreamCreate"),
            stream_synchronize: sym!("hipStreamSynchronize"),
            module_load_data: sym!("hipModuleLoadData"),
            module_unload: sym!("hipModuleUnload"),
            module_get_function: sym!("hipModuleGetFunction"),
            module_launch_kernel: sym!("hipModuleLaunchKernel"),
            event_create: sym!("hipEventCreate"),
            event_record: sym!("hipEventRecord"),
            event_synchronize: sym!("hipEventSynchronize"),
            event_elapsed_time: sym!("hipEventElapsedTime"),
            _lib: lib,
        };
        // SAFETY: flags must be 0.
        let r = unsafe { (t.init)(0) };
        // Without a GPU, ROCm 5 answers hipErrorInvalidDevice (101) and newer ones
        // hipErrorNoDevice (100): seen with libamdhip64 5.2 on a GPU-less Debian machine.
        if r != 0 {
            let (library, error) = (name.to_string(), t.error(r).to_string());
            return Err(
                if r == HipError::NO_DEVICE || r == HipError::INVALID_DEVICE {
                    OpenError::NoDevice { library, error }
                } else {
                    OpenError::Init { library, error }
                },
            );
        }
        Ok(t)
    }

    fn error(&self, code: E) -> HipError {
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: HIP returns static NUL-terminated strings.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        // SAFETY: both accept any code and return a static string.
        let (name, desc) = unsafe {
            (
                text((self.get_error_name)(code)),
                text((self.get_error_string)(code)),
            )
        };
        HipError {
            code,
            text: if desc.is_empty() || desc == name {
                name
            } else {
                format!("{name}: {desc}")
            },
        }
    }

    fn check(&self, code: E) -> Result<(), HipError> {
        if code == 0 {
            Ok(())
        } else {
            Err(self.error(code))
        }
    }

    /// One out-parameter of pointer size.
    fn out_ptr(&self, f: impl FnOnce(*mut Ptr) -> E) -> Result<u64, HipError> {
        let mut p: Ptr = std::ptr::null_mut();
        self.check(f(&mut p))?;
        Ok(p as u64)
    }

    fn out_int(&self, f: impl FnOnce(*mut c_int) -> E) -> Result<i32, HipError> {
        let mut v: c_int = 0;
        self.check(f(&mut v))?;
        Ok(v)
    }
}

/// One entry point; `T` is its C signature, as declared on the [`HipLib`] field it fills.
fn symbol<T: Copy>(lib: &Library, library: &str, name: &'static str) -> Result<T, OpenError> {
    // SAFETY: `T` is the symbol's C signature (module documentation); the pointer is used only
    // while `HipLib::_lib` keeps the library loaded.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| OpenError::MissingSymbol {
            library: library.to_string(),
            symbol: name.trim_end_matches('\0').to_string(),
            reason: e.to_string(),
        })
}

fn ptr(h: u64) -> Ptr {
    h as usize as Ptr
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

// SAFETY (every method): arguments are handles this table returned, buffers whose lengths
// are passed alongside, or out-parameters of the declared C type.
impl HipApi for HipLib {
    fn runtime_version(&self) -> Result<i32, HipError> {
        self.out_int(|v| unsafe { (self.runtime_get_version)(v) })
    }
    fn driver_version(&self) -> Result<i32, HipError> {
        self.out_int(|v| unsafe { (self.driver_get_version)(v) })
    }
    fn device_count(&self) -> Result<i32, HipError> {
        self.out_int(|v| unsafe { (self.get_device_count)(v) })
    }
    fn attribute(&self, attr: Attr, device: i32) -> Result<i32, HipError> {
        self.out_int(|v| unsafe { (self.device_get_attribute)(v, attr as c_int, device) })
    }
    fn device_name(&self, device: i32) -> Result<String, HipError> {
        let mut buf = [0u8; 256];
        self.check(unsafe {
            (self.device_get_name)(
                buf.as_mut_ptr() as *mut c_char,
                buf.len() as c_int - 1,
                device,
            )
        })?;
        Ok(c_string(&buf))
    }
    fn arch_name(&self, device: i32) -> Result<String, HipError> {
        let mut buf = vec![0u8; PROPS_BYTES];
        let (f, at) = match self.get_device_properties_r0600 {
            Some(f) => (f, ARCH_NAME_R0600),
            None => (self.get_device_properties, ARCH_NAME_R0000),
        };
        self.check(unsafe { f(buf.as_mut_ptr() as Ptr, device) })?;
        let name = c_string(&buf[at..at + 256]);
        if name.starts_with("gfx") {
            Ok(name)
        } else {
            Err(HipError {
                code: -1,
                text: format!("gcnArchName unreadable (found {name:?} at byte {at})"),
            })
        }
    }
    fn total_memory(&self, device: i32) -> Result<u64, HipError> {
        let mut v = 0usize;
        self.check(unsafe { (self.device_total_mem)(&mut v, device) })?;
        Ok(v as u64)
    }
    fn set_device(&self, device: i32) -> Result<(), HipError> {
        self.check(unsafe { (self.set_device)(device) })
    }
    fn malloc(&self, bytes: usize) -> Result<u64, HipError> {
        self.out_ptr(|p| unsafe { (self.malloc)(p, bytes.max(1)) })
    }
    fn free(&self, p: u64) -> Result<(), HipError> {
        self.check(unsafe { (self.free)(ptr(p)) })
    }
    fn copy_to_device(&self, dst: u64, src: &[u8]) -> Result<(), HipError> {
        self.check(unsafe { (self.memcpy_htod)(ptr(dst), src.as_ptr() as Ptr, src.len()) })
    }
    fn copy_from_device(&self, dst: &mut [u8], src: u64) -> Result<(), HipError> {
        self.check(unsafe { (self.memcpy_dtoh)(dst.as_mut_ptr() as Ptr, ptr(src), dst.len()) })
    }
    fn memset(&self, dst: u64, value: u8, bytes: usize, stream: u64) -> Result<(), HipError> {
        self.check(unsafe { (self.memset_d8_async)(ptr(dst), value, bytes, ptr(stream)) })
    }
    fn stream_create(&self) -> Result<u64, HipError> {
        self.out_ptr(|p| unsafe { (self.stream_create)(p) })
    }
    fn stream_synchronize(&self, stream: u64) -> Result<(), HipError> {
        self.check(unsafe { (self.stream_synchronize)(ptr(stream)) })
    }
    fn module_load(&self, image: &[u8]) -> Result<u64, HipError> {
        self.out_ptr(|p| unsafe { (self.module_load_data)(p, image.as_ptr() as *const c_void) })
    }
    fn module_unload(&self, module: u64) -> Result<(), HipError> {
        self.check(unsafe { (self.module_unload)(ptr(module)) })
    }
    fn function(&self, module: u64, name: &str) -> Result<u64, HipError> {
        let name = CString::new(name).map_err(|_| HipError {
            code: -1,
            text: format!("kernel name {name:?} contains a NUL"),
        })?;
        self.out_ptr(|p| unsafe { (self.module_get_function)(p, ptr(module), name.as_ptr()) })
    }
    fn launch(
        &self,
        function: u64,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: u64,
        args: &[u64],
    ) -> Result<(), HipError> {
        // One pointer per argument value; HIP copies the values before returning.
        let mut values = args.to_vec();
        let mut params: Vec<Ptr> = values.iter_mut().map(|v| v as *mut u64 as Ptr).collect();
        self.check(unsafe {
            (self.module_launch_kernel)(
                ptr(function),
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                ptr(stream),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
    fn event_create(&self) -> Result<u64, HipError> {
        self.out_ptr(|p| unsafe { (self.event_create)(p) })
    }
    fn event_record(&self, event: u64, stream: u64) -> Result<(), HipError> {
        self.check(unsafe { (self.event_record)(ptr(event), ptr(stream)) })
    }
    fn elapsed_ms(&self, start: u64, stop: u64) -> Result<f32, HipError> {
        self.check(unsafe { (self.event_synchronize)(ptr(stop)) })?;
        let mut ms = 0f32;
        self.check(unsafe { (self.event_elapsed_time)(&mut ms, ptr(start), ptr(stop)) })?;
        Ok(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the library, opening says which files it tried. With it (CI installs the
    /// Debian runtime 5.2 beside its headers), every entry point of the table resolves and
    /// `hipInit` runs: a GPU-less machine gets "found no AMD GPU", never a missing symbol.
    #[test]
    fn opening_names_the_runtime_or_resolves_every_entry_point() {
        match HipLib::open() {
            Ok(lib) => assert!(lib.runtime_version().is_ok()),
            Err(e @ OpenError::MissingSymbol { .. }) => panic!("{e}"),
            Err(e) => assert!(e.to_string().contains("libamdhip64.so"), "{e}"),
        }
    }

    #[test]
    fn arch_name_offsets_fit_the_buffer() {
        assert!(ARCH_NAME_R0600 + 256 <= PROPS_BYTES && ARCH_NAME_R0000 + 256 <= PROPS_BYTES);
        assert_eq!(
            c_string(b"gfx90a:sramecc+:xnack-\0junk"),
            "gfx90a:sramecc+:xnack-"
        );
    }
}
