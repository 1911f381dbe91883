use super::*;
use std::ffi::CStr;
use std::ptr::null;

const SEED_003: &str = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC";
const SEED_003_CONFIG: &str =
    "v3:bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=2,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma";

fn zeroed() -> ConfigC {
    // SAFETY: ConfigC is plain integers, a float and byte arrays: all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

fn text(buf: &[c_char]) -> String {
    // SAFETY: `fill` always NUL-terminates inside the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn last_error() -> String {
    // SAFETY: the library returns a valid thread-local C string.
    unsafe { CStr::from_ptr(convtune_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn seed_003_struct(layout: &CStr) -> ProblemC {
    ProblemC {
        direction: 2,
        dtype: 2,
        n: 16,
        c: 2048,
        h: 1,
        w: 512,
        k: 2048,
        y: 1,
        x: 2,
        pad_h: 0,
        pad_w: 0,
        stride_h: 1,
        stride_w: 2,
        dilation_h: 1,
        dilation_w: 1,
        groups: 1,
        layout: layout.as_ptr(),
        in_layout: null(),
        fil_layout: null(),
        out_layout: null(),
    }
}

/// The user database of the environment must not change what these tests see.
fn no_user_db() -> CString {
    CString::new("/nonexistent/convtune-capi-test.toml").unwrap()
}

#[test]
fn string_and_struct_find_the_shipped_seed_003_entry_in_any_layout_spelling() {
    let db = no_user_db();
    let mut from_str = zeroed();
    let line = CString::new(SEED_003).unwrap();
    let rc = unsafe {
        convtune_lookup_str(line.as_ptr(), c"sm_90".as_ptr(), db.as_ptr(), &mut from_str)
    };
    assert_eq!(rc, 0, "{}", last_error());
    assert_eq!(from_str.source, 0, "{}", text(&from_str.reason));
    assert_eq!(text(&from_str.config), SEED_003_CONFIG);
    assert_eq!(
        (from_str.block_m, from_str.block_n, from_str.block_k),
        (128, 128, 64)
    );
    assert_eq!(
        (from_str.warp_m, from_str.warp_n, from_str.stages),
        (64, 128, 3)
    );
    assert_eq!((from_str.lds, from_str.raster, from_str.mma), (1, 1, 1));
    assert!(text(&from_str.problem_key).ends_with("-I NHWGC -f GKYXC -O NHWGC"));

    for spelling in [c"NHWC", c"nhwgc", c"NHWGC"] {
        let mut from_struct = zeroed();
        let p = seed_003_struct(spelling);
        let rc = unsafe { convtune_lookup(&p, c"sm_90".as_ptr(), db.as_ptr(), &mut from_struct) };
        assert_eq!(rc, 0, "{spelling:?}: {}", last_error());
        assert_eq!(from_struct.source, 0, "{spelling:?}");
        assert_eq!(text(&from_struct.config), SEED_003_CONFIG);
        assert_eq!(text(&from_struct.problem_key), text(&from_str.problem_key));
    }
}

#[test]
fn an_untuned_problem_falls_back_and_says_so() {
    let db = no_user_db();
    let mut out = zeroed();
    let line = c"conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1";
    let rc =
        unsafe { convtune_lookup_str(line.as_ptr(), c"sm_90".as_ptr(), db.as_ptr(), &mut out) };
    assert_eq!(rc, 0, "{}", last_error());
    assert_ne!(out.source, 0, "not tuned, so not exact");
    if out.source == 1 {
        assert!(out.nearest_distance > 0.0);
        assert!(text(&out.nearest_key).starts_with("conv -F 1"));
    } else {
        assert_eq!(text(&out.nearest_key), "");
    }
    assert!(text(&out.config).starts_with("v"));
    assert!(!text(&out.reason).is_empty());
}

#[test]
fn errors_are_codes_and_messages() {
    let mut out = zeroed();
    let rc = unsafe {
        convtune_lookup_str(
            c"conv -n 0 -F 1".as_ptr(),
            c"sm_90".as_ptr(),
            null(),
            &mut out,
        )
    };
    assert_eq!(rc, Status::Problem as c_int);
    assert!(last_error().contains("-n"), "{}", last_error());

    let line = CString::new(SEED_003).unwrap();
    let rc = unsafe { convtune_lookup_str(line.as_ptr(), c"sm_77".as_ptr(), null(), &mut out) };
    assert_eq!(rc, Status::Arch as c_int);
    assert!(last_error().contains("sm_77"), "{}", last_error());

    let rc = unsafe { convtune_lookup_str(null(), c"sm_90".as_ptr(), null(), &mut out) };
    assert_eq!(rc, Status::Null as c_int);

    let mut p = seed_003_struct(c"NHWC");
    p.direction = 3;
    let rc = unsafe { convtune_lookup(&p, c"sm_90".as_ptr(), null(), &mut out) };
    assert_eq!(rc, Status::Problem as c_int);
    assert!(last_error().contains("direction 3"), "{}", last_error());
    p.direction = 2;
    p.layout = c"NHWQ".as_ptr();
    let rc = unsafe { convtune_lookup(&p, c"sm_90".as_ptr(), null(), &mut out) };
    assert_eq!(rc, Status::Problem as c_int);
    assert!(last_error().contains("NHWQ"), "{}", last_error());
}

#[test]
fn a_broken_user_database_is_an_error_not_ignored() {
    let dir = std::env::temp_dir().join(format!("convtune-capi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sm_90.toml");
    std::fs::write(&path, "this is not a database").unwrap();
    let db = CString::new(path.to_str().unwrap()).unwrap();
    let mut out = zeroed();
    let line = CString::new(SEED_003).unwrap();
    let rc =
        unsafe { convtune_lookup_str(line.as_ptr(), c"sm_90".as_ptr(), db.as_ptr(), &mut out) };
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(rc, Status::Database as c_int);
    assert!(last_error().contains("sm_90.toml"), "{}", last_error());
}

#[test]
fn a_panic_becomes_an_internal_error() {
    let rc = guard(|| panic!("boom"));
    assert_eq!(rc, Status::Internal as c_int);
    assert!(last_error().contains("boom"));
}

#[test]
fn long_text_is_cut_at_a_character_boundary() {
    let mut buf = [1 as c_char; 4];
    fill(&mut buf, "aé€");
    assert_eq!(text(&buf), "aé");
}
