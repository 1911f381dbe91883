//! NVPTX `wgmma.mma_async` (sm_90a): the warpgroup matrix instruction family behind
//! [`WarpgroupMma`], kept apart from [`super::nvptx`] because its accumulators are read-write
//! inline-asm operands, which need a helper of their own (`asm_floats`).

use super::ir::{ok, Ir};
use super::nvptx::Nvptx;
use super::spec::WarpgroupMma;
use crate::problem::DType;
use inkwell::values::{FloatValue, IntValue, PointerValue};

impl Nvptx {
    /// Inline asm `text` that reads `lead` (constraints `lead_cons`) and updates the floats
    /// `acc` in place, returning their new values. The accumulators are read-write ("+f" in
    /// CUDA), which LLVM spells as outputs "=f" with inputs tied to them ("0", "1", ...), so
    /// in `text` the accumulators are $0..$q-1 and the lead operands follow from $q.
    fn asm_floats<'ctx>(
        ir: &Ir<'_, 'ctx>,
        text: &str,
        lead_cons: &[&str],
        lead: &[inkwell::values::BasicMetadataValueEnum<'ctx>],
        acc: &[FloatValue<'ctx>],
        clobbers: &[&str],
    ) -> Vec<FloatValue<'ctx>> {
        use inkwell::types::BasicMetadataTypeEnum;
        use inkwell::values::BasicMetadataValueEnum;
        let q = acc.len();
        let mut cons: Vec<String> = (0..q).map(|_| "=f".to_string()).collect();
        cons.extend(lead_cons.iter().map(|c| c.to_string()));
        cons.extend((0..q).map(|i| i.to_string()));
        cons.extend(clobbers.iter().map(|c| c.to_string()));
        let f32t = ir.f32t();
        let ret = ir.ctx.struct_type(&vec![f32t.into(); acc.len()], false);
        let mut params: Vec<BasicMetadataTypeEnum> = lead
            .iter()
            .map(|v| match v {
                BasicMetadataValueEnum::IntValue(i) => i.get_type().into(),
                other => panic!("asm lead operand {other:?} is not an integer"),
            })
            .collect();
        params.extend(acc.iter().map(|_| BasicMetadataTypeEnum::from(f32t)));
        let fty = ret.fn_type(&params, false);
        let f = ir.ctx.create_inline_asm(
            fty,
            text.to_string(),
            cons.join(","),
            true,
            false,
            None,
            false,
        );
        let mut args = lead.to_vec();
        args.extend(acc.iter().map(|&v| BasicMetadataValueEnum::from(v)));
        let call = ok(ir.raw().build_indirect_call(fty, f, &args, ""));
        let r = match call.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => v,
            inkwell::values::ValueKind::Instruction(_) => {
                panic!("inline asm with outputs returns a value")
            }
        };
        (0..acc.len() as u32)
            .map(|i| ir.field(r, i).into_float_value())
            .collect()
    }
}

impl WarpgroupMma for Nvptx {
    fn smem_addr<'ctx>(&self, ir: &Ir<'_, 'ctx>, ptr: PointerValue<'ctx>) -> IntValue<'ctx> {
        // An addrspace(3) pointer is the address in the shared window (what `cvta.to.shared`
        // gives for a generic one).
        ok(ir.raw().build_ptr_to_int(ptr, ir.i32t(), ""))
    }
    fn fence(&self, ir: &Ir) {
        Self::asm_stmt(ir, "wgmma.fence.sync.aligned;");
    }
    fn commit(&self, ir: &Ir) {
        Self::asm_stmt(ir, "wgmma.commit_group.sync.aligned;");
    }
    fn wait<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        n: u32,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        Self::asm_floats(
            ir,
            &format!("wgmma.wait_group.sync.aligned {n};"),
            &[],
            &[],
            acc,
            &["~{memory}"],
        )
    }
    fn mma<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dt: DType,
        n: u32,
        trans: [bool; 2],
        da: IntValue<'ctx>,
        db: IntValue<'ctx>,
        acc: &[FloatValue<'ctx>],
    ) -> Vec<FloatValue<'ctx>> {
        // Operands (see `asm_floats`): $0..$q-1 the accumulators, $q and $q+1 the descriptors
        // ("l": 64-bit), $q+2 the scale-d flag (1: d = a·b + d).
        let q = acc.len();
        let ty = if dt == DType::BF16 { "bf16" } else { "f16" };
        let regs: Vec<String> = (0..q).map(|i| format!("${i}")).collect();
        let text = format!(
            "{{\n.reg .pred p;\nsetp.ne.b32 p, ${s}, 0;\n\
             wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, ${a}, ${b}, p, 1, 1, {ta}, {tb};\n}}",
            ta = u8::from(trans[0]),
            tb = u8::from(trans[1]),
            regs = regs.join(", "),
            a = q,
            b = q + 1,
            s = q + 2,
        );
        Self::asm_floats(
            ir,
            &text,
            &["l", "l", "r"],
            &[da.into(), db.into(), ir.c(1).into()],
            acc,
            &[],
        )
    }
}
