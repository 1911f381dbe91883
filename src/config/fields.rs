//! The one declaration of [`PerfConfig`]'s fields (the invocation of `perf_config_fields!` at
//! the end of this file), and what the macro derives from it: the struct, [`Field`] with each
//! field's string key, space-file key, loop level, value domain and the version of the string
//! form that added it, [`FieldLists`] (candidate values per field) and the per-field codes that
//! the search's lattice walks. A new field is one entry there plus the rules that read it.

use super::{
    ClusterShape, Cut, Epilogue, Grid, LdsLayout, LoadPath, MmaPath, Reduction, Transform,
};
use serde::{Deserialize, Serialize};
use std::ops::{Index, IndexMut};

/// What values a field takes, as its string form and space files write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// A positive integer.
    Number,
    /// A positive power of two (vector widths): space files reject other values.
    PowerOfTwo,
    /// One of these names; a value's code is its index.
    Named(&'static [&'static str]),
}

impl Domain {
    /// Whether the values are integers (whose code is the value itself).
    pub fn is_number(self) -> bool {
        !matches!(self, Domain::Named(_))
    }
}

/// A type a config field holds, seen as a code: the search's lattice orders a field's values by
/// code, and the string form and space files write the number or the name it stands for.
pub trait FieldValue: Copy + Eq {
    /// The names of the values by code, or `None` for an integer (its own code).
    const NAMES: Option<&'static [&'static str]>;
    /// The value's code.
    fn code(self) -> u32;
    /// The value with this code, if there is one.
    fn from_code(code: u32) -> Option<Self>;
}

impl FieldValue for u32 {
    const NAMES: Option<&'static [&'static str]> = None;
    fn code(self) -> u32 {
        self
    }
    fn from_code(code: u32) -> Option<Self> {
        Some(code)
    }
}

/// `FieldValue` for an enum with `ALL` and `NAMES` in discriminant order.
macro_rules! named_field_value {
    ($ty:ty) => {
        impl FieldValue for $ty {
            const NAMES: Option<&'static [&'static str]> = Some(&<$ty>::NAMES);
            fn code(self) -> u32 {
                self as u32
            }
            fn from_code(code: u32) -> Option<Self> {
                <$ty>::ALL.get(code as usize).copied()
            }
        }
    };
}
named_field_value!(LdsLayout);
named_field_value!(MmaPath);
named_field_value!(Reduction);
named_field_value!(LoadPath);
named_field_value!(Grid);
named_field_value!(Transform);
named_field_value!(ClusterShape);
named_field_value!(Epilogue);
named_field_value!(Cut);

/// One value per field, indexed by [`Field`]: a config's codes, a space's lists, the search's
/// statistics per field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PerField<T>([T; Field::COUNT]);

impl<T> PerField<T> {
    /// The value of each field computed by `f`.
    pub fn from_fn(f: impl FnMut(Field) -> T) -> Self {
        PerField(Field::ALL.map(f))
    }

    /// Each field with its value, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (Field, &T)> {
        Field::ALL.into_iter().zip(self.0.iter())
    }

    /// The values in declaration order (hashing, keys).
    pub fn as_array(&self) -> &[T; Field::COUNT] {
        &self.0
    }
}

impl<T> Index<Field> for PerField<T> {
    type Output = T;
    fn index(&self, f: Field) -> &T {
        &self.0[f as usize]
    }
}

impl<T> IndexMut<Field> for PerField<T> {
    fn index_mut(&mut self, f: Field) -> &mut T {
        &mut self.0[f as usize]
    }
}

/// Declares the fields once; see the invocation below for the grammar by example. Per field:
/// `key` in config strings, the `Field` variant, the loop `level` at which enumeration fixes
/// it (and legality rules of that level may read it), optionally `pow2` for widths, and
/// optionally `since` (the string-form version that added it) with the `default` value that
/// older strings and space files without it stand for.
macro_rules! perf_config_fields {
    (
        $(#[$smeta:meta])*
        pub struct PerfConfig {
            $(
                $(#[doc = $doc:literal])*
                #[field(key = $key:literal, variant = $variant:ident, level = $level:literal
                    $(, pow2 = $pow2:literal)? $(, since = $since:literal, default = $default:expr)?)]
                pub $name:ident: $ty:ty,
            )+
        }
    ) => {
        $(#[$smeta])*
        pub struct PerfConfig {
            $( $(#[doc = $doc])* pub $name: $ty, )+
        }

        /// A field of [`PerfConfig`]; variants in declaration order (the order of the string
        /// form).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Field {
            $( $(#[doc = $doc])* $variant, )+
        }

        impl Field {
            /// Every field in declaration order.
            pub const ALL: [Field; Field::COUNT] = [$(Field::$variant),+];
            /// Number of fields.
            pub const COUNT: usize = [$(Field::$variant),+].len();
            /// Space-file keys (the struct's field names) in declaration order.
            pub const NAMES: [&'static str; Field::COUNT] = [$(stringify!($name)),+];

            /// The key in config strings (`bm`), also used in rejection reasons.
            pub const fn key(self) -> &'static str {
                match self { $(Field::$variant => $key,)+ }
            }

            /// The key in search-space files: the struct field's name (`block_m`).
            pub const fn name(self) -> &'static str {
                Self::NAMES[self as usize]
            }

            /// The loop level at which enumeration fixes this field, outermost 0: a legality
            /// rule of level `l` reads only fields of levels up to `l`, so a failure there
            /// rejects the whole subtree below.
            pub const fn level(self) -> usize {
                match self { $(Field::$variant => $level,)+ }
            }

            /// The version of the string form that added this field.
            pub const fn since(self) -> u32 {
                match self { $(Field::$variant => perf_config_fields!(@since $($since)?),)+ }
            }

            /// The values the field takes.
            pub fn domain(self) -> Domain {
                match self {
                    $(Field::$variant => match <$ty as FieldValue>::NAMES {
                        Some(names) => Domain::Named(names),
                        None if perf_config_fields!(@pow2 $($pow2)?) => Domain::PowerOfTwo,
                        None => Domain::Number,
                    },)+
                }
            }

            /// The code that a string or space file written before [`Field::since`] stands
            /// for; `None` for a field every version has.
            pub fn default_code(self) -> Option<u32> {
                match self {
                    $(Field::$variant => perf_config_fields!(@default $ty; $($default)?),)+
                }
            }
        }

        impl PerfConfig {
            /// The code of field `f` ([`FieldValue::code`]).
            pub fn code(&self, f: Field) -> u32 {
                match f { $(Field::$variant => FieldValue::code(self.$name),)+ }
            }

            /// Every field's code.
            pub fn codes(&self) -> PerField<u32> {
                PerField([$(FieldValue::code(self.$name)),+])
            }

            /// The config with these codes, if each is a value of its field.
            pub fn from_codes(codes: &PerField<u32>) -> Option<PerfConfig> {
                Some(PerfConfig {
                    $($name: FieldValue::from_code(codes[Field::$variant])?,)+
                })
            }
        }

        /// Candidate values of every field: a search space's lists, whose product is the raw
        /// space.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct FieldLists {
            $( $(#[doc = $doc])* pub $name: Vec<$ty>, )+
        }

        impl FieldLists {
            /// How many values field `f` lists.
            pub fn len(&self, f: Field) -> usize {
                match f { $(Field::$variant => self.$name.len(),)+ }
            }

            /// Whether some field lists no value (the product is empty).
            pub fn is_empty(&self) -> bool {
                false $(|| self.$name.is_empty())+
            }

            /// The codes of field `f`'s values, in list order.
            pub fn codes(&self, f: Field) -> Vec<u32> {
                match f {
                    $(Field::$variant => self.$name.iter().map(|&v| FieldValue::code(v)).collect(),)+
                }
            }

            /// Replaces field `f`'s values by the values of `codes`; `false` (and no change)
            /// when a code is no value of the field.
            pub fn set_codes(&mut self, f: Field, codes: &[u32]) -> bool {
                match f {
                    $(Field::$variant => {
                        match codes.iter().map(|&c| FieldValue::from_code(c)).collect() {
                            Some(v) => { self.$name = v; true }
                            None => false,
                        }
                    })+
                }
            }

            /// The config made of each field's value at list position `ix[field]`.
            pub fn pick(&self, ix: &PerField<usize>) -> PerfConfig {
                PerfConfig { $($name: self.$name[ix[Field::$variant]],)+ }
            }

            /// Whether every field of `cfg` is one of the listed values.
            pub fn contains(&self, cfg: &PerfConfig) -> bool {
                true $(&& self.$name.contains(&cfg.$name))+
            }
        }
    };
    (@since) => { 1 };
    (@since $since:literal) => { $since };
    (@pow2) => { false };
    (@pow2 $pow2:literal) => { $pow2 };
    (@default $ty:ty;) => { None };
    (@default $ty:ty; $default:expr) => { Some(<$ty as FieldValue>::code($default)) };
}

perf_config_fields! {
    /// The tuning parameters of one implicit-GEMM kernel. Every sub-GEMM of a problem runs with
    /// the same config, so it must be legal for each of them.
    ///
    /// The string form (`Display` / `FromStr`) is `vN:` then `key=value` for each field in this
    /// order, as far as version N has fields: `v1:bm=..,bn=..,bk=..,wm=..,wn=..,st=..,va=..,
    /// vb=..,vc=..,lds=..,sk=..,rs=..`; `v2:` appends `mma`, `v3:` `red` and `ld`, `v4:` `pk` and
    /// `xf`, `v5:` `cl`, `v6:` `ep`, `v7:` `cut`. A config prints in the lowest version that can say it (`mma=sync` prints as `v1:`, so that old
    /// databases and new ones agree), and a `v1:` string parses as `mma=sync`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    pub struct PerfConfig {
        /// Block tile rows (M).
        #[field(key = "bm", variant = BlockM, level = 0)]
        pub block_m: u32,
        /// Block tile columns (N).
        #[field(key = "bn", variant = BlockN, level = 0)]
        pub block_n: u32,
        /// Block tile reduction depth (K) per main-loop step.
        #[field(key = "bk", variant = BlockK, level = 1)]
        pub block_k: u32,
        /// Warp (wave) tile rows.
        #[field(key = "wm", variant = WarpM, level = 0)]
        pub warp_m: u32,
        /// Warp (wave) tile columns.
        #[field(key = "wn", variant = WarpN, level = 0)]
        pub warp_n: u32,
        /// Shared-memory pipeline stages (1 = load, sync, compute).
        #[field(key = "st", variant = Stages, level = 2)]
        pub stages: u32,
        /// Global load vector width of A, elements.
        #[field(key = "va", variant = VecA, level = 5, pow2 = true)]
        pub vec_a: u32,
        /// Global load vector width of B, elements.
        #[field(key = "vb", variant = VecB, level = 6, pow2 = true)]
        pub vec_b: u32,
        /// Global store vector width of C, elements.
        #[field(key = "vc", variant = VecC, level = 7, pow2 = true)]
        pub vec_c: u32,
        /// Shared-memory layout.
        #[field(key = "lds", variant = Lds, level = 2)]
        pub lds: LdsLayout,
        /// Split of the reduction across blocks (results combined with atomics or a second
        /// pass).
        #[field(key = "sk", variant = SplitK, level = 3)]
        pub split_k: u32,
        /// Rasterisation group size: block rows that walk N together for L2 reuse (1 = plain
        /// row-major order).
        #[field(key = "rs", variant = Raster, level = 4)]
        pub raster: u32,
        /// Matrix instruction path.
        #[field(key = "mma", variant = Mma, level = 0, since = 2, default = MmaPath::Sync)]
        pub mma: MmaPath,
        /// How split-K slices are added up (`atomic`: f32 atomics; `fixup`: the last slice of
        /// a tile adds the others' partials inside the kernel).
        #[field(key = "red", variant = Red, level = 3, since = 3, default = Reduction::Atomic)]
        pub red: Reduction,
        /// How tiles reach shared memory on the `wgmma` path (`cp`, `tma` or `ws`).
        #[field(key = "ld", variant = Ld, level = 2, since = 3, default = LoadPath::Cp)]
        pub ld: LoadPath,
        /// Persistent grid (`0`: one block per work unit; `1`: a fixed grid of at most SMs ×
        /// resident blocks walking the work units, `ld=ws` only).
        #[field(key = "pk", variant = Persistent, level = 7, since = 4, default = Grid::PerTile)]
        pub persistent: Grid,
        /// Layout transform around the GEMMs (`none`, `nhwc`, `nhwc_out`): fixed outermost,
        /// because it picks the lowering that every other rule reads.
        #[field(key = "xf", variant = Xf, level = 0, since = 4, default = Transform::None)]
        pub xf: Transform,
        /// Thread-block cluster (`1`, `2m`, `2n`: two blocks on neighbouring tiles along M or
        /// N, the shared operand multicast; `ld=ws` with `pk=1` only).
        #[field(key = "cl", variant = Cluster, level = 7, since = 5, default = ClusterShape::One)]
        pub cluster: ClusterShape,
        /// How the persistent warp-specialised consumers store C (`reg`: from registers;
        /// `tma`: a swizzled shared-memory tile stored by TMA while they go on multiplying).
        #[field(key = "ep", variant = Ep, level = 7, since = 6, default = Epilogue::Reg)]
        pub epilogue: Epilogue,
        /// How stream-K cuts its region (`tile`: tile-major; `aligned`: every tile at the
        /// same K offsets, where that applies; `red=stream` only). With `red`, so that its
        /// rule prunes `aligned` before the inner loops.
        #[field(key = "cut", variant = Cut, level = 3, since = 7, default = Cut::Tile)]
        pub cut: Cut,
    }
}

impl Field {
    /// Number of loop levels (one more than the largest [`Field::level`]).
    pub const LEVELS: usize = {
        let mut max = 0;
        let mut i = 0;
        while i < Field::COUNT {
            if Field::ALL[i].level() > max {
                max = Field::ALL[i].level();
            }
            i += 1;
        }
        max + 1
    };

    /// The order in which enumeration nests the fields, outermost first: by level, and in
    /// declaration order within a level (bm, bn, wm, wn, mma, xf, bk, st, lds, ld, sk, red, cut,
    /// rs, va, vb, vc, pk, cl, ep).
    /// The raw space, and so every enumeration and recording, lists configs in this order with
    /// the last field varying fastest.
    pub const ENUMERATION: [Field; Field::COUNT] = {
        let mut out = [Field::ALL[0]; Field::COUNT];
        let mut n = 0;
        let mut level = 0;
        while level < Field::LEVELS {
            let mut i = 0;
            while i < Field::COUNT {
                if Field::ALL[i].level() == level {
                    out[n] = Field::ALL[i];
                    n += 1;
                }
                i += 1;
            }
            level += 1;
        }
        out
    };

    /// The fields enumeration fixes at `level`, in nesting order.
    pub fn at_level(level: usize) -> impl Iterator<Item = Field> {
        Field::ENUMERATION
            .into_iter()
            .filter(move |f| f.level() == level)
    }

    /// The field whose space-file key is `name`.
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declaration_facts() {
        let keys: Vec<_> = Field::ALL.iter().map(|f| f.key()).collect();
        assert_eq!(
            keys,
            [
                "bm", "bn", "bk", "wm", "wn", "st", "va", "vb", "vc", "lds", "sk", "rs", "mma",
                "red", "ld", "pk", "xf", "cl", "ep", "cut"
            ]
        );
        let order: Vec<_> = Field::ENUMERATION.iter().map(|f| f.key()).collect();
        assert_eq!(
            order,
            [
                "bm", "bn", "wm", "wn", "mma", "xf", "bk", "st", "lds", "ld", "sk", "red", "cut",
                "rs", "va", "vb", "vc", "pk", "cl", "ep"
            ]
        );
        assert_eq!(Field::LEVELS, 8);
        assert_eq!(Field::BlockM.name(), "block_m");
        assert_eq!(Field::from_name("split_k"), Some(Field::SplitK));
        for (i, f) in Field::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, i);
            // A field added by a later version comes after every field of earlier versions
            // (the string form appends), and has a default that older strings stand for.
            assert!(Field::ALL[..i].iter().all(|g| g.since() <= f.since()));
            assert_eq!(f.default_code().is_some(), f.since() > 1, "{f:?}");
        }
        for (i, &l) in LdsLayout::ALL.iter().enumerate() {
            assert_eq!(
                (l.code(), LdsLayout::from_code(i as u32)),
                (i as u32, Some(l))
            );
        }
        for (i, &m) in MmaPath::ALL.iter().enumerate() {
            assert_eq!(
                (m.code(), MmaPath::from_code(i as u32)),
                (i as u32, Some(m))
            );
        }
        assert_eq!(MmaPath::from_code(3), Some(MmaPath::Depthwise));
        assert_eq!(MmaPath::from_code(4), None);
        assert_eq!(Field::VecB.domain(), Domain::PowerOfTwo);
        assert_eq!(Field::Stages.domain(), Domain::Number);
        assert_eq!(Field::Lds.domain(), Domain::Named(&["pad", "swz"]));
    }

    #[test]
    fn codes_round_trip_and_lists_pick() {
        let c: PerfConfig =
            "v2:bm=128,bn=64,bk=32,wm=64,wn=32,st=3,va=8,vb=4,vc=2,lds=swz,sk=1,rs=8,mma=wg1"
                .parse()
                .unwrap();
        let codes = c.codes();
        assert_eq!(codes[Field::Lds], 1);
        assert_eq!(codes[Field::Mma], 2);
        assert_eq!(codes[Field::BlockN], 64);
        assert_eq!(PerfConfig::from_codes(&codes), Some(c));
        let mut bad = codes;
        bad[Field::Mma] = 7;
        assert_eq!(PerfConfig::from_codes(&bad), None);
        let mut lists = FieldLists::default();
        assert!(lists.is_empty());
        for f in Field::ALL {
            assert!(lists.set_codes(f, &[codes[f], 1]));
        }
        assert!(!lists.set_codes(Field::Lds, &[2]));
        assert!(!lists.is_empty() && lists.contains(&c));
        assert_eq!(lists.len(Field::Mma), 2);
        assert_eq!(lists.codes(Field::Mma), [2, 1]);
        assert_eq!(lists.pick(&PerField::default()), c);
        let mut ix = PerField::default();
        ix[Field::Mma] = 1;
        assert_eq!(lists.pick(&ix).mma, MmaPath::Wgmma);
        assert_eq!(
            PerfConfig { block_k: 0, ..c }.zero_field(),
            Some(Field::BlockK)
        );
        assert_eq!(c.zero_field(), None);
    }
}
