//! Calling a JIT-compiled kernel from the host: its parameters are the buffers in
//! `CONV_ARGS` order, its tensor maps (as many as the kernel takes: a one-launch strided
//! bwd-data kernel takes each phase's), then the emulated thread's context, all pointers.
//! Rust calls a function pointer only through a signature of fixed arity, so one per count.

/// Most parameters a kernel may take here: the 4 buffers, two tensor maps for each of
/// [`crate::lowering::MAX_PHASES`] phases, the thread context.
pub(super) const MAX_PARAMS: usize = 4 + 2 * crate::lowering::MAX_PHASES + 1;

macro_rules! arity {
    ($f:expr, $a:expr; $($i:literal)*) => {{
        type F = unsafe extern "C" fn($(arity!(@ptr $i)),*);
        std::mem::transmute::<usize, F>($f)($($a[$i]),*)
    }};
    (@ptr $i:literal) => { *const u8 };
}

/// Calls the kernel at `f` with the pointer parameters `a` (5 to [`MAX_PARAMS`]).
///
/// # Safety
/// `f` must be a kernel of the host spec taking exactly `a.len()` pointer parameters, each
/// valid for what the kernel does with it.
pub(super) unsafe fn call(f: usize, a: &[*const u8]) {
    match a.len() {
        5 => arity!(f, a; 0 1 2 3 4),
        6 => arity!(f, a; 0 1 2 3 4 5),
        7 => arity!(f, a; 0 1 2 3 4 5 6),
        8 => arity!(f, a; 0 1 2 3 4 5 6 7),
        9 => arity!(f, a; 0 1 2 3 4 5 6 7 8),
        10 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9),
        11 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10),
        12 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11),
        13 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12),
        14 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        15 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
        16 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        17 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
        18 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
        19 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18),
        20 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19),
        21 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20),
        22 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21),
        23 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22),
        24 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
        25 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24),
        26 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25),
        27 => arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26),
        28 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27)
        }
        29 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
        }
        30 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29)
        }
        31 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30)
        }
        32 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
        }
        33 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32)
        }
        34 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33)
        }
        35 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34)
        }
        36 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35)
        }
        37 => {
            arity!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36)
        }
        n => {
            unreachable!("a kernel of {n} parameters (at most {MAX_PARAMS}, checked when planned)")
        }
    }
}
