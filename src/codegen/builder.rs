//! `Kb`: the kernel builder. Short verbs over inkwell so that kernel code reads like a kernel
//! (`kb.add(a, b)`, `kb.load_global(..)`, `kb.barrier()`); every target difference goes through
//! [`TargetSpec`].
//!
//! Index arithmetic is i32 throughout: every tensor has fewer than 2^31 elements (the problem
//! validates that), and an out-of-range coordinate is never used as an address (it is replaced
//! by 0 before the access). inkwell's builder only fails when it is misused (no insertion point,
//! wrong operand types): such a failure is a bug in this module, so the verbs panic with the
//! LLVM message and [`super::compile`] turns the panic into [`super::CodegenError::Internal`].

use super::target::TargetSpec;
use crate::problem::DType;
use inkwell::{
    basic_block::BasicBlock,
    builder::{Builder, BuilderError},
    context::Context,
    intrinsics::Intrinsic,
    module::Module,
    types::{BasicTypeEnum, FloatType, IntType},
    values::{
        BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue, IntValue,
        PointerValue, VectorValue,
    },
    AddressSpace, IntPredicate,
};

/// Unwraps a builder result; an error here is a code-generator bug (see the module doc).
pub(crate) fn ok<T>(r: Result<T, BuilderError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("LLVM builder misuse: {e}"),
    }
}

/// Memory that an access goes to: decides the address space and lets the emulator check it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mem {
    /// Device memory (tensors, workspace).
    Global,
    /// Block-shared memory (LDS).
    Shared,
}

/// The kernel builder: one function being emitted into a module.
pub(crate) struct Kb<'a, 'ctx> {
    /// The LLVM context.
    pub ctx: &'ctx Context,
    /// The module the kernel lives in.
    pub module: &'a Module<'ctx>,
    /// Target specifics.
    pub spec: &'a dyn TargetSpec,
    /// The function being built.
    pub func: FunctionValue<'ctx>,
    b: Builder<'ctx>,
    entry: BasicBlock<'ctx>,
}

impl<'a, 'ctx> Kb<'a, 'ctx> {
    /// Starts a kernel `name(ptr input, ptr filter, ptr output, ptr workspace, <spec extras>)`.
    /// `readonly[i]` marks the tensors the kernel only reads.
    pub fn kernel(
        ctx: &'ctx Context,
        module: &'a Module<'ctx>,
        spec: &'a dyn TargetSpec,
        name: &str,
        readonly: [bool; 4],
    ) -> Self {
        let gptr = ctx.ptr_type(spec.global_as());
        let mut params: Vec<inkwell::types::BasicMetadataTypeEnum> = vec![gptr.into(); 4];
        for _ in 0..spec.extra_params() {
            params.push(ctx.ptr_type(AddressSpace::default()).into());
        }
        let func = module.add_function(name, ctx.void_type().fn_type(&params, false), None);
        spec.declare_kernel(ctx, func);
        for (i, ro) in readonly.iter().enumerate() {
            let loc = inkwell::attributes::AttributeLoc::Param(i as u32);
            for (attr, on) in [("noalias", true), ("nocapture", true), ("readonly", *ro)] {
                if on {
                    let kind = inkwell::attributes::Attribute::get_named_enum_kind_id(attr);
                    func.add_attribute(loc, ctx.create_enum_attribute(kind, 0));
                }
            }
        }
        let entry = ctx.append_basic_block(func, "entry");
        let b = ctx.create_builder();
        b.position_at_end(entry);
        Kb {
            ctx,
            module,
            spec,
            func,
            b,
            entry,
        }
    }

    /// Ends the kernel (`ret void`).
    pub fn finish(&self) {
        ok(self.b.build_return(None));
    }

    /// Kernel argument `i` (0 input, 1 filter, 2 output, 3 workspace, then target extras).
    pub fn param(&self, i: u32) -> PointerValue<'ctx> {
        self.func
            .get_nth_param(i)
            .unwrap_or_else(|| panic!("kernel has no parameter {i}"))
            .into_pointer_value()
    }

    /// The raw inkwell builder, for target code that needs an instruction this layer lacks.
    pub fn raw(&self) -> &Builder<'ctx> {
        &self.b
    }

    // ---- types and constants ----

    /// i32.
    pub fn i32t(&self) -> IntType<'ctx> {
        self.ctx.i32_type()
    }
    /// f32.
    pub fn f32t(&self) -> FloatType<'ctx> {
        self.ctx.f32_type()
    }
    /// Storage type of one element of `dt` (f16 and bf16 are stored as i16 bits).
    pub fn elem_ty(&self, dt: DType) -> BasicTypeEnum<'ctx> {
        match dt {
            DType::F32 => self.ctx.f32_type().into(),
            DType::F16 | DType::BF16 => self.ctx.i16_type().into(),
        }
    }
    /// `<n x elem>` of `dt`'s storage type, or the scalar for n = 1.
    pub fn vec_ty(&self, dt: DType, n: u32) -> BasicTypeEnum<'ctx> {
        if n == 1 {
            return self.elem_ty(dt);
        }
        match dt {
            DType::F32 => self.ctx.f32_type().vec_type(n).into(),
            DType::F16 | DType::BF16 => self.ctx.i16_type().vec_type(n).into(),
        }
    }
    /// i32 constant.
    pub fn c(&self, v: i64) -> IntValue<'ctx> {
        self.ctx.i32_type().const_int(v as u64, true)
    }
    /// f32 constant.
    pub fn cf(&self, v: f64) -> FloatValue<'ctx> {
        self.ctx.f32_type().const_float(v)
    }
    /// i1 constant.
    pub fn cbool(&self, v: bool) -> IntValue<'ctx> {
        self.ctx.bool_type().const_int(v as u64, false)
    }
    /// The zero of a type (`zeroinitializer` for vectors).
    pub fn zero(&self, ty: BasicTypeEnum<'ctx>) -> BasicValueEnum<'ctx> {
        ty.const_zero()
    }

    // ---- integer arithmetic ----

    /// a + b.
    pub fn add(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_add(a, b, ""))
    }
    /// a − b.
    pub fn sub(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_sub(a, b, ""))
    }
    /// a · b.
    pub fn mul(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_mul(a, b, ""))
    }
    /// a + constant (no instruction for 0).
    pub fn addc(&self, a: IntValue<'ctx>, c: i64) -> IntValue<'ctx> {
        if c == 0 {
            a
        } else {
            self.add(a, self.c(c))
        }
    }
    /// a · constant (no instruction for 0 or 1).
    pub fn mulc(&self, a: IntValue<'ctx>, c: i64) -> IntValue<'ctx> {
        match c {
            0 => self.c(0),
            1 => a,
            _ => self.mul(a, self.c(c)),
        }
    }
    /// a / constant, unsigned.
    pub fn udivc(&self, a: IntValue<'ctx>, c: u32) -> IntValue<'ctx> {
        if c == 1 {
            a
        } else {
            ok(self.b.build_int_unsigned_div(a, self.c(c as i64), ""))
        }
    }
    /// a mod constant, unsigned.
    pub fn uremc(&self, a: IntValue<'ctx>, c: u32) -> IntValue<'ctx> {
        if c == 1 {
            self.c(0)
        } else {
            ok(self.b.build_int_unsigned_rem(a, self.c(c as i64), ""))
        }
    }
    /// a / b, unsigned.
    pub fn udiv(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_unsigned_div(a, b, ""))
    }
    /// a mod b, unsigned.
    pub fn urem(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_unsigned_rem(a, b, ""))
    }
    /// a ^ b.
    pub fn xor(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_xor(a, b, ""))
    }
    /// min(a, b), unsigned.
    pub fn umin(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        let lt = self.ult(a, b);
        self.seli(lt, a, b)
    }

    // ---- comparisons and selection ----

    /// a < b, unsigned (a negative i32 is huge: `ult(c, len)` is the whole bounds check).
    pub fn ult(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_compare(IntPredicate::ULT, a, b, ""))
    }
    /// a < constant, unsigned.
    pub fn ultc(&self, a: IntValue<'ctx>, c: u32) -> IntValue<'ctx> {
        self.ult(a, self.c(c as i64))
    }
    /// a == b.
    pub fn eq(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_compare(IntPredicate::EQ, a, b, ""))
    }
    /// Logical and of i1 values (true for none).
    pub fn all(&self, conds: &[IntValue<'ctx>]) -> IntValue<'ctx> {
        let mut it = conds.iter();
        match it.next() {
            None => self.cbool(true),
            Some(&first) => it.fold(first, |acc, &c| ok(self.b.build_and(acc, c, ""))),
        }
    }
    /// cond ? a : b for i32.
    pub fn seli(
        &self,
        cond: IntValue<'ctx>,
        a: IntValue<'ctx>,
        b: IntValue<'ctx>,
    ) -> IntValue<'ctx> {
        self.select(cond, a.into(), b.into()).into_int_value()
    }
    /// cond ? a : b.
    pub fn select(
        &self,
        cond: IntValue<'ctx>,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> BasicValueEnum<'ctx> {
        ok(self.b.build_select(cond, a, b, ""))
    }

    // ---- conversions ----

    /// Reinterprets the bits of a value as another type of the same size.
    pub fn bitcast(
        &self,
        v: BasicValueEnum<'ctx>,
        ty: BasicTypeEnum<'ctx>,
    ) -> BasicValueEnum<'ctx> {
        ok(self.b.build_bit_cast(v, ty, ""))
    }
    /// Element `i` of a vector.
    pub fn extract(&self, v: VectorValue<'ctx>, i: u32) -> BasicValueEnum<'ctx> {
        ok(self.b.build_extract_element(v, self.c(i as i64), ""))
    }
    /// Field `i` of a struct value (multi-result intrinsics).
    pub fn field(&self, v: BasicValueEnum<'ctx>, i: u32) -> BasicValueEnum<'ctx> {
        ok(self.b.build_extract_value(v.into_struct_value(), i, ""))
    }
    /// Builds a vector of type `ty` from scalars (or returns the scalar for one element).
    pub fn gather(
        &self,
        ty: BasicTypeEnum<'ctx>,
        elems: &[BasicValueEnum<'ctx>],
    ) -> BasicValueEnum<'ctx> {
        if elems.len() == 1 {
            return elems[0];
        }
        let mut v = ty.const_zero().into_vector_value();
        for (i, &e) in elems.iter().enumerate() {
            v = ok(self.b.build_insert_element(v, e, self.c(i as i64), ""));
        }
        v.into()
    }
    /// The elements of a vector value (or the scalar itself).
    pub fn scatter(&self, v: BasicValueEnum<'ctx>) -> Vec<BasicValueEnum<'ctx>> {
        match v {
            BasicValueEnum::VectorValue(vv) => (0..vv.get_type().get_size())
                .map(|i| self.extract(vv, i))
                .collect(),
            s => vec![s],
        }
    }
    /// One stored element (i16 bits or f32) as f32.
    pub fn widen(&self, v: BasicValueEnum<'ctx>, dt: DType) -> FloatValue<'ctx> {
        match dt {
            DType::F32 => v.into_float_value(),
            _ => self.spec.half_to_f32(self, v.into_int_value(), dt),
        }
    }
    /// f32 rounded to the storage type of `dt`.
    pub fn narrow(&self, v: FloatValue<'ctx>, dt: DType) -> BasicValueEnum<'ctx> {
        match dt {
            DType::F32 => v.into(),
            _ => self.spec.f32_to_half(self, v, dt).into(),
        }
    }

    // ---- floating point ----

    /// a · b + c (fused where the target fuses).
    pub fn fma(
        &self,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
        c: FloatValue<'ctx>,
    ) -> FloatValue<'ctx> {
        self.intrinsic(
            "llvm.fmuladd",
            &[self.f32t().into()],
            &[a.into(), b.into(), c.into()],
        )
        .into_float_value()
    }
    // ---- memory ----

    /// `ptr + idx` elements of type `elem`.
    pub fn gep(
        &self,
        elem: BasicTypeEnum<'ctx>,
        ptr: PointerValue<'ctx>,
        idx: IntValue<'ctx>,
    ) -> PointerValue<'ctx> {
        // SAFETY: a plain (not inbounds) GEP is defined for any index; the kernels only
        // dereference pointers whose index was checked or replaced by 0.
        ok(unsafe { self.b.build_gep(elem, ptr, &[idx], "") })
    }
    /// `ptr + bytes`, for byte offsets (i64: the faulting switch reaches past 4 GiB).
    pub fn gep_bytes(&self, ptr: PointerValue<'ctx>, bytes: i64) -> PointerValue<'ctx> {
        let off = self.ctx.i64_type().const_int(bytes as u64, true);
        // SAFETY: as in `gep`.
        ok(unsafe { self.b.build_gep(self.ctx.i8_type(), ptr, &[off], "") })
    }
    /// Loads `ty` from `ptr` in `mem` with the given alignment (bytes).
    pub fn load(
        &self,
        mem: Mem,
        ty: BasicTypeEnum<'ctx>,
        ptr: PointerValue<'ctx>,
        align: u32,
    ) -> BasicValueEnum<'ctx> {
        let ptr = self
            .spec
            .guard(self, mem, ptr, type_bytes(ty), align, false);
        let v = ok(self.b.build_load(ty, ptr, ""));
        if let Some(inst) = v.as_instruction_value() {
            // Alignment is a power of two ≤ 16 by construction; an error is a bug.
            inst.set_alignment(align)
                .unwrap_or_else(|e| panic!("load alignment {align}: {e}"));
        }
        v
    }
    /// Stores `v` at `ptr` in `mem` with the given alignment (bytes).
    pub fn store(&self, mem: Mem, ptr: PointerValue<'ctx>, v: BasicValueEnum<'ctx>, align: u32) {
        let ptr = self
            .spec
            .guard(self, mem, ptr, type_bytes(v.get_type()), align, true);
        let inst = ok(self.b.build_store(ptr, v));
        inst.set_alignment(align)
            .unwrap_or_else(|e| panic!("store alignment {align}: {e}"));
    }
    /// Atomically adds an f32 to global memory (split-K reduction), through the prelude's
    /// `convtune_atomic_fadd` (relaxed, device scope; see [`TargetSpec::prelude_ir`]).
    pub fn atomic_add_f32(&self, ptr: PointerValue<'ctx>, v: FloatValue<'ctx>) {
        let ptr = self.spec.guard(self, Mem::Global, ptr, 4, 4, true);
        self.call(
            self.prelude_fn("convtune_atomic_fadd"),
            &[ptr.into(), v.into()],
        );
    }
    /// A helper function defined by the target's prelude IR.
    pub fn prelude_fn(&self, name: &str) -> FunctionValue<'ctx> {
        self.module
            .get_function(name)
            .unwrap_or_else(|| panic!("target prelude defines no function {name}"))
    }
    /// A private variable (promoted to registers by the optimizer), allocated in the entry
    /// block so that SROA sees it, initialised to `init` at the current point.
    pub fn var(&self, init: BasicValueEnum<'ctx>) -> PointerValue<'ctx> {
        let tmp = self.ctx.create_builder();
        match self.entry.get_first_instruction() {
            Some(i) => tmp.position_before(&i),
            None => tmp.position_at_end(self.entry),
        }
        let p = ok(tmp.build_alloca(init.get_type(), ""));
        ok(self.b.build_store(p, init));
        p
    }
    /// Reads a private variable.
    pub fn get(&self, var: PointerValue<'ctx>, ty: BasicTypeEnum<'ctx>) -> BasicValueEnum<'ctx> {
        ok(self.b.build_load(ty, var, ""))
    }
    /// Writes a private variable.
    pub fn set(&self, var: PointerValue<'ctx>, v: BasicValueEnum<'ctx>) {
        ok(self.b.build_store(var, v));
    }

    // ---- calls ----

    /// Calls a function.
    pub fn call(
        &self,
        f: FunctionValue<'ctx>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Option<BasicValueEnum<'ctx>> {
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        match ok(self.b.build_call(f, &args, "")).try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => Some(v),
            inkwell::values::ValueKind::Instruction(_) => None,
        }
    }
    /// Calls an LLVM intrinsic; `overloads` are the types that pick an overloaded one. Returns
    /// the result, or an i32 zero for void intrinsics (callers of void ones ignore it).
    pub fn intrinsic(
        &self,
        name: &str,
        overloads: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
    ) -> BasicValueEnum<'ctx> {
        let f = Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, overloads))
            .unwrap_or_else(|| panic!("LLVM 19 has no intrinsic {name} for {overloads:?}"));
        self.call(f, args).unwrap_or_else(|| self.c(0).into())
    }
    /// Declares (once) an external function of this module.
    pub fn extern_fn(
        &self,
        name: &str,
        ty: inkwell::types::FunctionType<'ctx>,
    ) -> FunctionValue<'ctx> {
        self.module
            .get_function(name)
            .unwrap_or_else(|| self.module.add_function(name, ty, None))
    }

    // ---- GPU ----

    /// Thread index within the block (blocks are one-dimensional).
    pub fn thread_idx(&self) -> IntValue<'ctx> {
        self.spec.thread_idx(self)
    }
    /// Block index along `dim` (0 = x, 2 = z).
    pub fn block_idx(&self, dim: u32) -> IntValue<'ctx> {
        self.spec.block_idx(self, dim)
    }
    /// Block-wide barrier that also orders shared-memory accesses.
    pub fn barrier(&self) {
        self.spec.barrier(self)
    }
    /// The block's dynamic shared memory.
    pub fn shared_base(&self) -> PointerValue<'ctx> {
        self.spec.shared_base(self)
    }

    // ---- control flow ----

    /// `if cond { body }`.
    pub fn if_then(&self, cond: IntValue<'ctx>, body: impl FnOnce(&Self)) {
        let then_bb = self.ctx.append_basic_block(self.func, "then");
        let done = self.ctx.append_basic_block(self.func, "endif");
        ok(self.b.build_conditional_branch(cond, then_bb, done));
        self.b.position_at_end(then_bb);
        body(self);
        ok(self.b.build_unconditional_branch(done));
        self.b.position_at_end(done);
    }

    /// `for i in lo..hi { body(i) }` as a runtime loop (i32, step 1). For loops with constant
    /// bounds that should be unrolled, kernel code uses a Rust loop instead.
    pub fn for_range(
        &self,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
        body: impl FnOnce(&Self, IntValue<'ctx>),
    ) {
        let pre = self.current_block();
        let head = self.ctx.append_basic_block(self.func, "loop");
        let body_bb = self.ctx.append_basic_block(self.func, "body");
        let done = self.ctx.append_basic_block(self.func, "endloop");
        ok(self.b.build_unconditional_branch(head));
        self.b.position_at_end(head);
        let i = ok(self.b.build_phi(self.i32t(), "i"));
        i.add_incoming(&[(&lo, pre)]);
        let iv = i.as_basic_value().into_int_value();
        let go = ok(self.b.build_int_compare(IntPredicate::SLT, iv, hi, ""));
        ok(self.b.build_conditional_branch(go, body_bb, done));
        self.b.position_at_end(body_bb);
        body(self, iv);
        let next = self.addc(iv, 1);
        let latch = self.current_block();
        ok(self.b.build_unconditional_branch(head));
        i.add_incoming(&[(&next, latch)]);
        self.b.position_at_end(done);
    }

    fn current_block(&self) -> BasicBlock<'ctx> {
        self.b
            .get_insert_block()
            .unwrap_or_else(|| panic!("builder has no insertion block"))
    }
}

/// Size in bytes of a scalar or vector type of the kinds kernels load and store.
pub(crate) fn type_bytes(ty: BasicTypeEnum) -> u32 {
    match ty {
        BasicTypeEnum::IntType(t) => t.get_bit_width().div_ceil(8),
        BasicTypeEnum::FloatType(t) => {
            let ctx = t.get_context();
            if t == ctx.f64_type() {
                8
            } else if t == ctx.f32_type() {
                4
            } else {
                2
            }
        }
        BasicTypeEnum::VectorType(v) => v.get_size() * type_bytes(v.get_element_type()),
        BasicTypeEnum::PointerType(_) => 8,
        BasicTypeEnum::ArrayType(a) => a.len() * type_bytes(a.get_element_type()),
        BasicTypeEnum::StructType(s) => s.get_field_types().into_iter().map(type_bytes).sum(),
        #[allow(unreachable_patterns)]
        _ => 0,
    }
}
