//! NVPTX TMA (sm_90): `cp.async.bulk.tensor` tile and im2col loads (optionally multicast to
//! the cluster), the bulk tile store and its groups, and the `grid_constant` tensor-map
//! parameters they read, behind [`BulkTensorCopy`].

use super::ir::{ok, Ir};
use super::nvptx::Nvptx;
use super::spec::BulkTensorCopy;
use inkwell::values::{IntValue, PointerValue};

impl Nvptx {
    /// The `.multicast::cluster` qualifier and `, $mask` operand (operand number `at`) of a
    /// TMA copy to the cluster blocks in `multicast`; empty strings for a plain copy.
    fn multicast(at: usize, multicast: Option<u16>) -> (&'static str, String) {
        match multicast {
            Some(_) => (".multicast::cluster", format!(", ${at}")),
            None => ("", String::new()),
        }
    }
}

impl BulkTensorCopy for Nvptx {
    fn declare_map_param<'ctx>(&self, ir: &Ir<'_, 'ctx>, index: u32) {
        use inkwell::attributes::{Attribute, AttributeLoc};
        let ctx = ir.ctx;
        let loc = AttributeLoc::Param(index);
        let map_ty = ctx
            .i8_type()
            .array_type(crate::abi::TENSOR_MAP_BYTES as u32);
        let byval = Attribute::get_named_enum_kind_id("byval");
        ir.func
            .add_attribute(loc, ctx.create_type_attribute(byval, map_ty.into()));
        let align = Attribute::get_named_enum_kind_id("align");
        ir.func.add_attribute(
            loc,
            ctx.create_enum_attribute(align, crate::abi::TENSOR_MAP_ALIGN as u64),
        );
        // "grid_constant" lists parameters counting from 1.
        let node = ctx.metadata_node(&[
            ir.func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string("grid_constant").into(),
            ctx.metadata_node(&[ctx.i32_type().const_int(index as u64 + 1, false).into()])
                .into(),
        ]);
        ir.module
            .add_global_metadata("nvvm.annotations", &node)
            .unwrap_or_else(|e| panic!("nvvm.annotations: {e}"));
    }
    fn prefetch_map<'ctx>(&self, ir: &Ir<'_, 'ctx>, map: PointerValue<'ctx>) {
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        Self::asm_in(ir, "prefetch.tensormap [$0];", &["l"], &[m]);
    }
    fn store_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        src: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
    ) {
        let n = coords.len();
        let list: Vec<String> = (0..n).map(|i| format!("${}", i + 1)).collect();
        let text = format!(
            "cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group [$0, {{{}}}], [${}];",
            list.join(", "),
            n + 1
        );
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        let mut args = vec![m];
        args.extend_from_slice(coords);
        args.push(Self::shared32(ir, src));
        let mut cons = vec!["l"];
        cons.extend(std::iter::repeat_n("r", n));
        cons.push("r");
        Self::asm_in(ir, &text, &cons, &args);
    }
    fn commit_bulk(&self, ir: &Ir) {
        Self::asm_stmt(ir, "cp.async.bulk.commit_group;");
    }
    fn wait_bulk(&self, ir: &Ir, pending: u32, read: bool) {
        let r = if read { ".read" } else { "" };
        Self::asm_stmt(ir, &format!("cp.async.bulk.wait_group{r} {pending};"));
    }
    fn load_tile<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
        multicast: Option<u16>,
    ) {
        let n = coords.len();
        let list: Vec<String> = (0..n).map(|i| format!("${}", i + 2)).collect();
        let (mc, mask) = Self::multicast(n + 3, multicast);
        let text = format!(
            "cp.async.bulk.tensor.{n}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\
             {mc} [$0], [$1, {{{}}}], [${}]{mask};",
            list.join(", "),
            n + 2
        );
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        let mut args = vec![Self::shared32(ir, dst), m];
        args.extend_from_slice(coords);
        args.push(Self::shared32(ir, bar));
        let mut cons = vec!["r", "l"];
        cons.extend(std::iter::repeat_n("r", n));
        cons.push("r");
        if let Some(m) = multicast {
            args.push(ir.ctx.i16_type().const_int(u64::from(m), false));
            cons.push("h");
        }
        Self::asm_in(ir, &text, &cons, &args);
    }
    fn load_im2col<'ctx>(
        &self,
        ir: &Ir<'_, 'ctx>,
        dst: PointerValue<'ctx>,
        map: PointerValue<'ctx>,
        coords: &[IntValue<'ctx>],
        offsets: &[IntValue<'ctx>],
        bar: PointerValue<'ctx>,
        multicast: Option<u16>,
    ) {
        let (n, o) = (coords.len(), offsets.len());
        let list = |from: usize, len: usize| -> String {
            (from..from + len)
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (mc, mask) = Self::multicast(n + 3 + o, multicast);
        let text = format!(
            "cp.async.bulk.tensor.{n}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes\
             {mc} [$0], [$1, {{{}}}], [${}], {{{}}}{mask};",
            list(2, n),
            n + 2,
            list(n + 3, o)
        );
        let m = ok(ir.raw().build_ptr_to_int(map, ir.ctx.i64_type(), ""));
        let mut args = vec![Self::shared32(ir, dst), m];
        args.extend_from_slice(coords);
        args.push(Self::shared32(ir, bar));
        // The offsets are 16-bit operands (`h` registers).
        let i16t = ir.ctx.i16_type();
        args.extend(
            offsets
                .iter()
                .map(|&v| ok(ir.raw().build_int_truncate(v, i16t, ""))),
        );
        let mut cons = vec!["r", "l"];
        cons.extend(std::iter::repeat_n("r", n));
        cons.push("r");
        cons.extend(std::iter::repeat_n("h", o));
        if let Some(m) = multicast {
            args.push(ir.ctx.i16_type().const_int(u64::from(m), false));
            cons.push("h");
        }
        Self::asm_in(ir, &text, &cons, &args);
    }
}
