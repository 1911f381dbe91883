//! Register and memory use of AMDGPU kernels, read from the code object's `NT_AMDGPU_METADATA`
//! note (a MessagePack map). This is how a candidate that spills or overflows is rejected, and
//! occupancy estimated, with no AMD GPU present. The ELF and MessagePack subsets needed are
//! small enough to read here directly.

use super::CodegenError;

/// Resource use of one AMDGPU kernel, as the backend reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AmdKernelResources {
    /// Kernel symbol name.
    pub name: String,
    /// Architectural vector registers per lane.
    pub vgpr_count: u32,
    /// Accumulation registers per lane (MFMA results; 0 before gfx908).
    pub agpr_count: u32,
    /// Scalar registers per wave.
    pub sgpr_count: u32,
    /// Statically allocated LDS bytes (dynamic LDS comes on top).
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per lane (non-zero means spills or private arrays).
    pub private_segment_fixed_size: u32,
    /// VGPRs spilled to scratch.
    pub vgpr_spill_count: u32,
    /// SGPRs spilled.
    pub sgpr_spill_count: u32,
    /// Lanes per wave.
    pub wavefront_size: u32,
    /// Largest block the kernel was compiled for.
    pub max_flat_workgroup_size: u32,
    /// Bytes of the kernel argument segment (explicit and hidden arguments).
    pub kernarg_segment_size: u32,
    /// The arguments the runtime packs, in the metadata's order (hidden ones included).
    pub args: Vec<AmdKernelArg>,
}

/// One entry of a kernel's `.args` in the metadata: where the runtime puts a value.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AmdKernelArg {
    /// The parameter's name in the IR (the ABI role's name: `x`, `w`, `y`, `workspace`), or
    /// empty when the code object does not record it.
    pub name: String,
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Bytes of the value.
    pub size: u32,
    /// `global_buffer`, `by_value`, or a `hidden_…` kind the runtime fills in itself.
    pub value_kind: String,
}

impl AmdKernelArg {
    /// Whether the runtime supplies it (block counts, queue pointers…), not the launcher.
    pub fn hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

impl AmdKernelResources {
    /// Whether the kernel spills to memory: VGPR spills, or any scratch. SGPR spills alone
    /// are not counted: LLVM spills SGPRs into lanes of a VGPR, which costs a few VALU
    /// instructions and no memory traffic (if they reached memory, scratch would be > 0).
    pub fn spills(&self) -> bool {
        self.vgpr_spill_count > 0 || self.private_segment_fixed_size > 0
    }

    /// Vector registers per lane, ArchVGPRs and AccVGPRs together. On gfx90a and gfx94x the
    /// two share one file of 512 and `.vgpr_count` already is the unified total (LLVM's
    /// `getTotalNumVGPRs`: ArchVGPRs rounded up to 4, plus AGPRs); on gfx908 they are separate
    /// files of 256 each and the total is the sum.
    pub fn total_vgprs(&self, arch: &str) -> u32 {
        if unified_vgprs(arch) {
            self.vgpr_count.max(self.agpr_count)
        } else {
            self.vgpr_count + self.agpr_count
        }
    }

    /// Checks the explicit arguments against the launch ABI: one 8-byte `global_buffer` per
    /// device pointer, at consecutive naturally aligned offsets from 0. The runtime packs
    /// arguments by this metadata, so a mismatch would pass pointers into the wrong slots.
    pub fn check_args(&self, abi: &[crate::abi::KernelArg]) -> Result<(), String> {
        let explicit: Vec<&AmdKernelArg> = self.args.iter().filter(|a| !a.hidden()).collect();
        if explicit.len() != abi.len() {
            return Err(format!(
                "kernel {} declares {} explicit argument(s), the launch ABI has {}",
                self.name,
                explicit.len(),
                abi.len()
            ));
        }
        let mut offset = 0u32;
        for (i, (meta, arg)) in explicit.iter().zip(abi).enumerate() {
            let size = arg.kind.bytes() as u32;
            offset = offset.div_ceil(size.min(8)) * size.min(8);
            let kind_ok = match arg.kind {
                crate::abi::ArgKind::DevicePtr => meta.value_kind == "global_buffer",
                crate::abi::ArgKind::TensorMap(_) => meta.value_kind == "by_value",
            };
            let name_ok = meta.name.is_empty() || meta.name == arg.role.name();
            if !kind_ok || !name_ok || meta.size != size || meta.offset != offset {
                return Err(format!(
                    "kernel {} argument {i}: metadata says `{}`, {} of {} bytes at offset {}; \
                     the ABI needs `{}`, a {} of {size} bytes at offset {offset}",
                    self.name,
                    meta.name,
                    meta.value_kind,
                    meta.size,
                    meta.offset,
                    arg.role,
                    arg.kind
                ));
            }
            offset += size;
        }
        if self.kernarg_segment_size < offset {
            return Err(format!(
                "kernel {}: kernarg segment of {} bytes is smaller than its {offset} bytes of \
                 explicit arguments",
                self.name, self.kernarg_segment_size
            ));
        }
        Ok(())
    }
}

/// Whether ArchVGPRs and AccVGPRs share one register file (CDNA2 and CDNA3).
pub fn unified_vgprs(arch: &str) -> bool {
    matches!(arch, "gfx90a" | "gfx940" | "gfx941" | "gfx942" | "gfx950")
}

/// Resource use of every kernel of a code object.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AmdResources {
    /// One entry per kernel, in the metadata's order.
    pub kernels: Vec<AmdKernelResources>,
}

impl AmdResources {
    /// The entry of kernel `name`.
    pub fn kernel(&self, name: &str) -> Option<&AmdKernelResources> {
        self.kernels.iter().find(|k| k.name == name)
    }
    /// Why this code object is not worth timing, if it spills: the first kernel that spills
    /// registers or uses scratch, with the linker's counts. Scratch on AMD is per-lane private
    /// memory in DRAM, an order of magnitude slower than registers, and legality's estimate
    /// was meant to keep every config within the register file.
    pub fn spill_report(&self) -> Option<String> {
        self.kernels.iter().find(|k| k.spills()).map(|k| {
            format!(
                "kernel {} spills: {} VGPRs + {} AGPRs used, {} VGPR and {} SGPR spills, \
                     {} bytes of scratch per lane",
                k.name,
                k.vgpr_count,
                k.agpr_count,
                k.vgpr_spill_count,
                k.sgpr_spill_count,
                k.private_segment_fixed_size
            )
        })
    }

    /// Whether any kernel spills (see [`AmdKernelResources::spills`]).
    pub fn spills(&self) -> bool {
        self.kernels.iter().any(AmdKernelResources::spills)
    }
}

/// Reads the metadata note of a linked code object: what a runtime (or a test standing in for
/// one) needs to know about its kernels without loading it.
pub fn read(elf: &[u8]) -> Result<AmdResources, CodegenError> {
    let desc = find_note(elf)
        .ok_or_else(|| CodegenError::Metadata("no NT_AMDGPU_METADATA note".into()))?;
    let (doc, _) = decode(desc, 0).map_err(CodegenError::Metadata)?;
    let kernels = doc
        .get("amdhsa.kernels")
        .and_then(Msg::as_array)
        .ok_or_else(|| CodegenError::Metadata("metadata has no amdhsa.kernels".into()))?;
    let num = |k: &Msg, key: &str| k.get(key).and_then(Msg::as_u64).unwrap_or(0) as u32;
    Ok(AmdResources {
        kernels: kernels
            .iter()
            .map(|k| AmdKernelResources {
                name: k
                    .get(".name")
                    .and_then(Msg::as_str)
                    .unwrap_or_default()
                    .to_string(),
                vgpr_count: num(k, ".vgpr_count"),
                agpr_count: num(k, ".agpr_count"),
                sgpr_count: num(k, ".sgpr_count"),
                group_segment_fixed_size: num(k, ".group_segment_fixed_size"),
                private_segment_fixed_size: num(k, ".private_segment_fixed_size"),
                vgpr_spill_count: num(k, ".vgpr_spill_count"),
                sgpr_spill_count: num(k, ".sgpr_spill_count"),
                wavefront_size: num(k, ".wavefront_size"),
                max_flat_workgroup_size: num(k, ".max_flat_workgroup_size"),
                kernarg_segment_size: num(k, ".kernarg_segment_size"),
                args: k
                    .get(".args")
                    .and_then(Msg::as_array)
                    .unwrap_or_default()
                    .iter()
                    .map(|a| AmdKernelArg {
                        name: a
                            .get(".name")
                            .and_then(Msg::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        offset: num(a, ".offset"),
                        size: num(a, ".size"),
                        value_kind: a
                            .get(".value_kind")
                            .and_then(Msg::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    })
                    .collect(),
            })
            .collect(),
    })
}

fn le(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(n)?)?;
    Some(s.iter().rev().fold(0u64, |acc, &x| (acc << 8) | x as u64))
}

/// The descriptor of the `AMDGPU` note of type 32 in any SHT_NOTE section (ELF64 LE).
fn find_note(elf: &[u8]) -> Option<&[u8]> {
    if elf.get(0..4)? != b"\x7fELF" || *elf.get(4)? != 2 || *elf.get(5)? != 1 {
        return None;
    }
    let shoff = le(elf, 0x28, 8)? as usize;
    let shentsize = le(elf, 0x3a, 2)? as usize;
    let shnum = le(elf, 0x3c, 2)? as usize;
    for i in 0..shnum {
        let sh = shoff.checked_add(i.checked_mul(shentsize)?)?;
        if le(elf, sh + 4, 4)? != 7 {
            continue;
        }
        let (off, size) = (
            le(elf, sh + 0x18, 8)? as usize,
            le(elf, sh + 0x20, 8)? as usize,
        );
        let notes = elf.get(off..off.checked_add(size)?)?;
        let mut at = 0;
        while at + 12 <= notes.len() {
            let namesz = le(notes, at, 4)? as usize;
            let descsz = le(notes, at + 4, 4)? as usize;
            let kind = le(notes, at + 8, 4)?;
            let name = notes.get(at + 12..at + 12 + namesz)?;
            let desc_at = at + 12 + namesz.div_ceil(4) * 4;
            let desc = notes.get(desc_at..desc_at + descsz)?;
            if kind == 32 && name.starts_with(b"AMDGPU") {
                return Some(desc);
            }
            at = desc_at + descsz.div_ceil(4) * 4;
        }
    }
    None
}

/// The MessagePack values the metadata uses.
#[derive(Debug, Clone, PartialEq)]
enum Msg {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Msg>),
    Map(Vec<(Msg, Msg)>),
}

impl Msg {
    fn get(&self, key: &str) -> Option<&Msg> {
        match self {
            Msg::Map(kv) => kv
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Msg::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_u64(&self) -> Option<u64> {
        match self {
            Msg::Int(i) if *i >= 0 => Some(*i as u64),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<&[Msg]> {
        match self {
            Msg::Array(a) => Some(a),
            _ => None,
        }
    }
}

fn be(b: &[u8], at: usize, n: usize) -> Result<u64, String> {
    let s = b
        .get(at..at + n)
        .ok_or_else(|| format!("truncated MessagePack at byte {at}"))?;
    Ok(s.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64))
}

/// Decodes one value at `at`; returns it and the offset after it.
fn decode(b: &[u8], at: usize) -> Result<(Msg, usize), String> {
    let t = *b
        .get(at)
        .ok_or_else(|| format!("truncated MessagePack at byte {at}"))?;
    let p = at + 1;
    let bytes = |p: usize, n: usize| -> Result<Vec<u8>, String> {
        b.get(p..p + n)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| format!("truncated MessagePack string at byte {p}"))
    };
    let string = |p: usize, n: usize| -> Result<(Msg, usize), String> {
        Ok((
            Msg::Str(String::from_utf8_lossy(&bytes(p, n)?).into_owned()),
            p + n,
        ))
    };
    let seq = |mut p: usize, n: usize, pairs: bool| -> Result<(Msg, usize), String> {
        let mut items = Vec::new();
        let mut kv = Vec::new();
        for _ in 0..n {
            let (k, q) = decode(b, p)?;
            p = q;
            if pairs {
                let (v, q) = decode(b, p)?;
                p = q;
                kv.push((k, v));
            } else {
                items.push(k);
            }
        }
        Ok((
            if pairs {
                Msg::Map(kv)
            } else {
                Msg::Array(items)
            },
            p,
        ))
    };
    match t {
        0x00..=0x7f => Ok((Msg::Int(t as i64), p)),
        0x80..=0x8f => seq(p, (t & 0x0f) as usize, true),
        0x90..=0x9f => seq(p, (t & 0x0f) as usize, false),
        0xa0..=0xbf => string(p, (t & 0x1f) as usize),
        0xc0 => Ok((Msg::Nil, p)),
        0xc2 => Ok((Msg::Bool(false), p)),
        0xc3 => Ok((Msg::Bool(true), p)),
        0xc4..=0xc6 => {
            let w = 1 << (t - 0xc4);
            let n = be(b, p, w)? as usize;
            Ok((Msg::Bin(bytes(p + w, n)?), p + w + n))
        }
        0xca => Ok((
            Msg::Float(f32::from_bits(be(b, p, 4)? as u32) as f64),
            p + 4,
        )),
        0xcb => Ok((Msg::Float(f64::from_bits(be(b, p, 8)?)), p + 8)),
        0xcc..=0xcf => {
            let w = 1 << (t - 0xcc);
            Ok((Msg::Int(be(b, p, w)? as i64), p + w))
        }
        0xd0..=0xd3 => {
            let w = 1 << (t - 0xd0);
            let v = be(b, p, w)?;
            let shift = 64 - 8 * w as u32;
            Ok((Msg::Int(((v << shift) as i64) >> shift), p + w))
        }
        0xd9..=0xdb => {
            let w = 1 << (t - 0xd9);
            string(p + w, be(b, p, w)? as usize)
        }
        0xdc | 0xdd => {
            let w = if t == 0xdc { 2 } else { 4 };
            seq(p + w, be(b, p, w)? as usize, false)
        }
        0xde | 0xdf => {
            let w = if t == 0xde { 2 } else { 4 };
            seq(p + w, be(b, p, w)? as usize, true)
        }
        0xe0..=0xff => Ok((Msg::Int(t as i8 as i64), p)),
        _ => Err(format!(
            "unsupported MessagePack type 0x{t:02x} at byte {at}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_formats_the_metadata_uses() {
        // {"a": [1, -3, 300], "bb": true, "c": "xyz", "d": -200, "e": 1.5f32}
        let mut b = vec![0x85, 0xa1, b'a', 0x93, 0x01, 0xfd, 0xcd, 0x01, 0x2c];
        b.extend([
            0xa2, b'b', b'b', 0xc3, 0xa1, b'c', 0xd9, 3, b'x', b'y', b'z',
        ]);
        b.extend([
            0xa1, b'd', 0xd1, 0xff, 0x38, 0xa1, b'e', 0xca, 0x3f, 0xc0, 0, 0,
        ]);
        let (m, end) = decode(&b, 0).unwrap();
        assert_eq!(end, b.len());
        assert_eq!(
            m.get("a"),
            Some(&Msg::Array(vec![Msg::Int(1), Msg::Int(-3), Msg::Int(300)]))
        );
        assert_eq!(m.get("bb"), Some(&Msg::Bool(true)));
        assert_eq!(m.get("c").and_then(Msg::as_str), Some("xyz"));
        assert_eq!(m.get("d"), Some(&Msg::Int(-200)));
        assert_eq!(m.get("e"), Some(&Msg::Float(1.5)));
        assert!(decode(&b[..5], 0).is_err());
    }

    #[test]
    fn rejects_non_elf() {
        assert!(read(b"not an elf file at all").is_err());
    }
}
