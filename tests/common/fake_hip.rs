//! A host-memory stand-in for the HIP runtime (`FakeHip`), the in-process worker policy that
//! restarts a lost measurer, and a device backend over them: what tests/amd.rs drives a gfx90a
//! campaign through without an AMD GPU.

use convtune::abi::{ArgRole, CONV_ARGS};
use convtune::arch::Vendor;
use convtune::codegen::{read_code_object, AmdResources};
use convtune::problem::{ConvProblem, DType, Tensor};
use convtune::runtime::hip::{Attr, HipApi, HipError, HipMeasurer};
use convtune::runtime::{
    DeviceBackend, Fingerprint, LaunchPlan, MeasureDevice, Outcome, RuntimeError,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the stand-in saw, across "processes".
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    Memset {
        ptr: u64,
        value: u8,
        bytes: usize,
    },
    Launch {
        name: String,
        args: Vec<u64>,
        shared: u32,
    },
    Record,
}

/// State shared by every stand-in "process" of one test.
#[derive(Default)]
pub(crate) struct World {
    pub(crate) problem: Option<ConvProblem>,
    /// Code objects loaded so far, across restarts (1-based count).
    pub(crate) loads: usize,
    /// The load whose kernels fault (0: none).
    pub(crate) fault_load: usize,
    /// Stand-in processes started.
    pub(crate) processes: usize,
    pub(crate) calls: Vec<Call>,
}

/// One process's view of the HIP runtime, in host memory.
pub(crate) struct FakeHip {
    world: Arc<Mutex<World>>,
    inner: Mutex<Inner>,
}

#[derive(Default)]
pub(crate) struct Inner {
    next: u64,
    memory: HashMap<u64, Vec<u8>>,
    /// Module → (metadata, faults).
    modules: HashMap<u64, (AmdResources, bool)>,
    /// Function → (module, kernel name).
    functions: HashMap<u64, (u64, String)>,
    events: HashMap<u64, f64>,
    /// Simulated device time, µs.
    clock: f64,
    /// A fault was raised; every later call fails with it (the context is gone).
    dead: bool,
}

pub(crate) const ILLEGAL_ADDRESS: HipError = HipError {
    code: HipError::ILLEGAL_ADDRESS,
    text: String::new(),
};

pub(crate) fn err(code: i32, text: &str) -> HipError {
    HipError {
        code,
        text: text.into(),
    }
}

impl FakeHip {
    pub(crate) fn new(world: Arc<Mutex<World>>) -> FakeHip {
        world.lock().unwrap().processes += 1;
        FakeHip {
            world,
            inner: Mutex::new(Inner {
                next: 0x1000,
                ..Inner::default()
            }),
        }
    }
    fn log(&self, c: Call) {
        self.world.lock().unwrap().calls.push(c);
    }
    fn alive(&self) -> Result<std::sync::MutexGuard<'_, Inner>, HipError> {
        let g = self.inner.lock().unwrap();
        if g.dead {
            return Err(ILLEGAL_ADDRESS);
        }
        Ok(g)
    }
    fn handle(inner: &mut Inner) -> u64 {
        inner.next += 0x1000;
        inner.next
    }
}

pub(crate) fn decode(dt: DType, b: &[u8]) -> Vec<f64> {
    match dt {
        DType::F32 => b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DType::F16 => b
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        DType::BF16 => b
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
    }
}

pub(crate) fn encode(dt: DType, v: &[f64]) -> Vec<u8> {
    match dt {
        DType::F32 => v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect(),
        DType::F16 => v
            .iter()
            .flat_map(|&x| half::f16::from_f64(x).to_le_bytes())
            .collect(),
        DType::BF16 => v
            .iter()
            .flat_map(|&x| half::bf16::from_f64(x).to_le_bytes())
            .collect(),
    }
}

impl HipApi for FakeHip {
    fn runtime_version(&self) -> Result<i32, HipError> {
        Ok(60_241_133)
    }
    fn driver_version(&self) -> Result<i32, HipError> {
        Ok(60_241_133)
    }
    fn device_count(&self) -> Result<i32, HipError> {
        Ok(1)
    }
    fn attribute(&self, attr: Attr, _: i32) -> Result<i32, HipError> {
        Ok(match attr {
            Attr::ClockRate => 1_700_000,
            Attr::L2CacheSize => 8 << 20,
            Attr::MaxThreadsPerBlock => 1024,
            Attr::MemoryClockRate => 1_600_000,
            Attr::MultiprocessorCount => 110,
            Attr::MaxSharedMemoryPerBlock => 64 << 10,
            Attr::WarpSize => 64,
            Attr::GcnArch => 910,
        })
    }
    fn device_name(&self, _: i32) -> Result<String, HipError> {
        Ok("AMD Instinct MI250X".into())
    }
    fn arch_name(&self, _: i32) -> Result<String, HipError> {
        Ok("gfx90a:sramecc+:xnack-".into())
    }
    fn total_memory(&self, _: i32) -> Result<u64, HipError> {
        Ok(64 << 30)
    }
    fn set_device(&self, d: i32) -> Result<(), HipError> {
        assert_eq!(d, 0);
        Ok(())
    }
    fn malloc(&self, bytes: usize) -> Result<u64, HipError> {
        let mut g = self.alive()?;
        let p = Self::handle(&mut g);
        g.next += bytes as u64; // distinct, non-overlapping addresses
        g.memory.insert(p, vec![0xAB; bytes]);
        Ok(p)
    }
    fn free(&self, ptr: u64) -> Result<(), HipError> {
        let mut g = self.alive()?;
        g.memory
            .remove(&ptr)
            .map(|_| ())
            .ok_or_else(|| err(1, "free of an unknown pointer"))
    }
    fn copy_to_device(&self, dst: u64, src: &[u8]) -> Result<(), HipError> {
        let mut g = self.alive()?;
        let m = g.memory.get_mut(&dst).ok_or_else(|| err(1, "bad dst"))?;
        assert_eq!(m.len(), src.len(), "whole-buffer uploads");
        m.copy_from_slice(src);
        Ok(())
    }
    fn copy_from_device(&self, dst: &mut [u8], src: u64) -> Result<(), HipError> {
        let g = self.alive()?;
        let m = g.memory.get(&src).ok_or_else(|| err(1, "bad src"))?;
        dst.copy_from_slice(&m[..dst.len()]);
        Ok(())
    }
    fn memset(&self, dst: u64, value: u8, bytes: usize, _: u64) -> Result<(), HipError> {
        let mut g = self.alive()?;
        let m = g.memory.get_mut(&dst).ok_or_else(|| err(1, "bad memset"))?;
        assert!(bytes <= m.len(), "memset past the allocation");
        m[..bytes].fill(value);
        g.clock += 1.0;
        drop(g);
        self.log(Call::Memset {
            ptr: dst,
            value,
            bytes,
        });
        Ok(())
    }
    fn stream_create(&self) -> Result<u64, HipError> {
        Ok(Self::handle(&mut *self.alive()?))
    }
    fn stream_synchronize(&self, _: u64) -> Result<(), HipError> {
        self.alive().map(|_| ())
    }
    fn module_load(&self, image: &[u8]) -> Result<u64, HipError> {
        let meta = read_code_object(image).map_err(|e| err(200, &e.to_string()))?;
        let mut w = self.world.lock().unwrap();
        w.loads += 1;
        let faults = w.loads == w.fault_load;
        drop(w);
        let mut g = self.alive()?;
        let m = Self::handle(&mut g);
        g.modules.insert(m, (meta, faults));
        Ok(m)
    }
    fn module_unload(&self, module: u64) -> Result<(), HipError> {
        let mut g = self.alive()?;
        g.modules
            .remove(&module)
            .map(|_| ())
            .ok_or_else(|| err(400, "bad module"))
    }
    fn function(&self, module: u64, name: &str) -> Result<u64, HipError> {
        let mut g = self.alive()?;
        let (meta, _) = g
            .modules
            .get(&module)
            .ok_or_else(|| err(400, "bad module"))?;
        if meta.kernel(name).is_none() {
            return Err(err(500, "hipErrorNotFound"));
        }
        let f = Self::handle(&mut g);
        g.functions.insert(f, (module, name.to_string()));
        Ok(f)
    }
    fn launch(
        &self,
        function: u64,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        _: u64,
        args: &[u64],
    ) -> Result<(), HipError> {
        let problem = self.world.lock().unwrap().problem.expect("a problem");
        let mut g = self.alive()?;
        let (module, name) = g.functions[&function].clone();
        let (meta, faults) = &g.modules[&module];
        let k = meta.kernel(&name).unwrap();
        let faults = *faults;
        // HIP packs `args` by the metadata: one explicit argument per value, 8 bytes each.
        let explicit: Vec<_> = k.args.iter().filter(|a| !a.hidden()).collect();
        assert_eq!(explicit.len(), args.len(), "{name}: argument count");
        assert!(explicit.iter().all(|a| a.size == 8));
        assert!(block.iter().product::<u32>() <= k.max_flat_workgroup_size);
        assert!(grid.iter().all(|&g| g > 0));
        // Each tensor argument is the buffer of that tensor, with its exact size.
        let dt = problem.dtype();
        for t in Tensor::ALL {
            let p = args[ArgRole::of(t).position(CONV_ARGS).unwrap()];
            let len = g.memory.get(&p).map(Vec::len);
            let want = problem.tensor_elems(t) as usize * dt.bytes() as usize;
            assert_eq!(len, Some(want), "{name}: argument `{}`", ArgRole::of(t));
        }
        let ws = args[ArgRole::Workspace.position(CONV_ARGS).unwrap()];
        assert!(ws == 0 || g.memory.contains_key(&ws), "{name}: workspace");
        g.clock += 10.0 + (module % 0x7000) as f64 / 0x1000 as f64;
        if faults {
            g.dead = true;
        } else {
            let read = |t: Tensor| {
                decode(
                    dt,
                    &g.memory[&args[ArgRole::of(t).position(CONV_ARGS).unwrap()]],
                )
            };
            let [x, w, y] = Tensor::ALL.map(read);
            let out = convtune::reference::direct_conv(&problem, &x, &w, &y);
            let written = problem.direction().written();
            let p = args[ArgRole::of(written).position(CONV_ARGS).unwrap()];
            g.memory.insert(p, encode(dt, &out));
        }
        drop(g);
        self.log(Call::Launch {
            name,
            args: args.to_vec(),
            shared,
        });
        Ok(())
    }
    fn event_create(&self) -> Result<u64, HipError> {
        Ok(Self::handle(&mut *self.alive()?))
    }
    fn event_record(&self, event: u64, _: u64) -> Result<(), HipError> {
        let mut g = self.alive()?;
        let now = g.clock;
        g.events.insert(event, now);
        drop(g);
        self.log(Call::Record);
        Ok(())
    }
    fn elapsed_ms(&self, start: u64, stop: u64) -> Result<f32, HipError> {
        let g = self.alive()?;
        Ok(((g.events[&stop] - g.events[&start]) / 1000.0) as f32)
    }
}

/// The worker's policy, in process: a measurer whose device is lost is dropped (the process
/// exits) and the next request starts a fresh one, given the problem again.
pub(crate) struct Restarting {
    world: Arc<Mutex<World>>,
    measurer: Option<HipMeasurer<FakeHip>>,
    problem: Option<(ConvProblem, LaunchPlan, u64)>,
}

impl Restarting {
    fn ensure(&mut self) -> Result<&mut HipMeasurer<FakeHip>, RuntimeError> {
        if self.measurer.is_none() {
            let mut m = HipMeasurer::new(FakeHip::new(self.world.clone()), 0)?;
            if let Some((p, r, seed)) = &self.problem {
                m.set_problem(p, r, *seed)?;
            }
            self.measurer = Some(m);
        }
        Ok(self.measurer.as_mut().unwrap())
    }
}

impl MeasureDevice for Restarting {
    fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        self.world.lock().unwrap().problem = Some(*problem);
        self.problem = None;
        let t = self.ensure()?.set_problem(problem, reference, seed)?;
        self.problem = Some((*problem, reference.clone(), seed));
        Ok(t)
    }
    fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        let m = self.ensure()?;
        let outcome = m.measure(plan)?;
        if m.lost().is_some() {
            self.measurer = None;
        }
        Ok(outcome)
    }
}

pub(crate) struct FakeAmdBackend {
    pub(crate) world: Arc<Mutex<World>>,
}

impl DeviceBackend for FakeAmdBackend {
    fn name(&self) -> &'static str {
        "fake HIP"
    }
    fn vendor(&self) -> Vendor {
        Vendor::Amd
    }
    fn looked_for(&self) -> &'static str {
        "a host-memory HIP stand-in"
    }
    fn discover(&self) -> Result<Vec<Fingerprint>, RuntimeError> {
        let api = FakeHip::new(self.world.clone());
        Ok(convtune::runtime::hip::devices(&api)?
            .iter()
            .map(|d| d.fingerprint())
            .collect())
    }
    fn open(&self, _: usize) -> Result<Box<dyn MeasureDevice>, RuntimeError> {
        Ok(Box::new(Restarting {
            world: self.world.clone(),
            measurer: None,
            problem: None,
        }))
    }
}
