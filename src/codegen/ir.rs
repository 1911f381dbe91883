//! `Ir`: short verbs over inkwell that mean the same on every target (integer and float
//! arithmetic, conversions, constants, private variables, calls). It knows no target: the
//! target specs ([`super::target`]) build their instructions from these verbs, and the kernel
//! builder [`super::builder::Kb`] adds the target-dependent ones on top, so neither of them
//! has to know the other.
//!
//! inkwell's builder only fails when it is misused (no insertion point, wrong operand types):
//! such a failure is a bug in the code generator, so the verbs panic with the LLVM message and
//! [`super::compile`] turns the panic into [`super::CodegenError::Internal`].

use crate::problem::DType;
use inkwell::{
    basic_block::BasicBlock,
    builder::{Builder, BuilderError},
    context::Context,
    intrinsics::Intrinsic,
    module::Module,
    types::{BasicTypeEnum, FloatType, IntType},
    values::{
        BasicMetadataValueEnum, BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue,
        VectorValue,
    },
    IntPredicate,
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

/// One function being emitted into a module, with an insertion point.
pub(crate) struct Ir<'a, 'ctx> {
    /// The LLVM context.
    pub ctx: &'ctx Context,
    /// The module the function lives in.
    pub module: &'a Module<'ctx>,
    /// The function being built.
    pub func: FunctionValue<'ctx>,
    b: Builder<'ctx>,
    entry: BasicBlock<'ctx>,
}

impl<'a, 'ctx> Ir<'a, 'ctx> {
    /// Starts emitting `func` at a new entry block.
    pub fn new(ctx: &'ctx Context, module: &'a Module<'ctx>, func: FunctionValue<'ctx>) -> Self {
        let entry = ctx.append_basic_block(func, "entry");
        let b = ctx.create_builder();
        b.position_at_end(entry);
        Ir {
            ctx,
            module,
            func,
            b,
            entry,
        }
    }

    /// The raw inkwell builder, for target code that needs an instruction this layer lacks.
    pub fn raw(&self) -> &Builder<'ctx> {
        &self.b
    }

    /// The function's last parameter (where a target appends its own, e.g. the emulator's
    /// thread context).
    pub fn last_param(&self) -> BasicValueEnum<'ctx> {
        self.func
            .get_last_param()
            .unwrap_or_else(|| panic!("function has no parameters"))
    }

    /// The block instructions are being appended to.
    pub fn current_block(&self) -> BasicBlock<'ctx> {
        self.b
            .get_insert_block()
            .unwrap_or_else(|| panic!("builder has no insertion block"))
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
    /// The high 32 bits of the 64-bit product a · b, unsigned (`mul.hi.u32`).
    pub fn umulhi(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        let i64t = self.ctx.i64_type();
        let p = self.mul(self.zext(a, i64t), self.zext(b, i64t));
        let hi = ok(self
            .b
            .build_right_shift(p, i64t.const_int(32, false), false, ""));
        ok(self.b.build_int_truncate(hi, self.i32t(), ""))
    }
    /// a mod b, unsigned.
    pub fn urem(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_unsigned_rem(a, b, ""))
    }
    /// i64 constant (bit patterns: descriptors).
    pub fn c64(&self, v: u64) -> IntValue<'ctx> {
        self.ctx.i64_type().const_int(v, false)
    }
    /// Zero-extends an integer to `ty`.
    pub fn zext(&self, v: IntValue<'ctx>, ty: IntType<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_z_extend(v, ty, ""))
    }
    /// a & b.
    pub fn and(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_and(a, b, ""))
    }
    /// a | b.
    pub fn or(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_or(a, b, ""))
    }
    /// a >> b, logical.
    pub fn lshr(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_right_shift(a, b, false, ""))
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
    /// max(a, b), unsigned.
    pub fn umax(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        let lt = self.ult(a, b);
        self.seli(lt, b, a)
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
    /// a < b, signed.
    pub fn slt(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_compare(IntPredicate::SLT, a, b, ""))
    }
    /// a ≤ b, signed.
    pub fn sle(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        ok(self.b.build_int_compare(IntPredicate::SLE, a, b, ""))
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
    /// a + b (f32, IEEE: never contracted with a neighbouring multiply).
    pub fn fadd(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> FloatValue<'ctx> {
        ok(self.b.build_float_add(a, b, ""))
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
