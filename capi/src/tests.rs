use super::*;
use convtune::config::{Domain, Field};
use convtune::space::PerfConfig;
use std::ffi::CStr;
use std::ptr::null;

const SEED_003: &str = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC";

/// What the shipped database answers for seed 003, read from it (a re-tune edits no test).
fn seed_003_shipped() -> PerfConfig {
    let p: convtune::problem::ConvProblem = SEED_003.parse().unwrap();
    let db = convtune::db::system("sm_90").unwrap().unwrap();
    let entry = db
        .get(&p)
        .next()
        .expect("the shipped database has seed 003");
    entry.config.parse().unwrap()
}

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
    let shipped = seed_003_shipped();
    assert_eq!(text(&from_str.config), shipped.to_string());
    assert_eq!(
        (from_str.block_m, from_str.block_n, from_str.block_k),
        (shipped.block_m, shipped.block_n, shipped.block_k)
    );
    assert_eq!(
        (from_str.warp_m, from_str.warp_n, from_str.stages),
        (shipped.warp_m, shipped.warp_n, shipped.stages)
    );
    assert_eq!(from_str.raster, shipped.raster);
    // Every field, enums included (lds, mma, red, ld, …): the struct reads back as the entry.
    assert_eq!(config::read_fields(&from_str).unwrap(), shipped);
    assert!(text(&from_str.problem_key).ends_with("-I NHWGC -f GKYXC -O NHWGC"));

    for spelling in [c"NHWC", c"nhwgc", c"NHWGC"] {
        let mut from_struct = zeroed();
        let p = seed_003_struct(spelling);
        let rc = unsafe { convtune_lookup(&p, c"sm_90".as_ptr(), db.as_ptr(), &mut from_struct) };
        assert_eq!(rc, 0, "{spelling:?}: {}", last_error());
        assert_eq!(from_struct.source, 0, "{spelling:?}");
        assert_eq!(text(&from_struct.config), shipped.to_string());
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

/// The candidate lookups: the single lookup's answer first, then other configs, each once,
/// each a config; the deterministic one answers no atomics; both spellings agree.
#[test]
fn candidates_start_with_the_lookup_and_list_each_config_once() {
    let db = no_user_db();
    let line = c"conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 4";
    let problem: convtune::problem::ConvProblem = line.to_str().unwrap().parse().unwrap();
    let mut one = zeroed();
    let rc =
        unsafe { convtune_lookup_str(line.as_ptr(), c"sm_90".as_ptr(), db.as_ptr(), &mut one) };
    assert_eq!(rc, 0, "{}", last_error());
    for deterministic in [0, 1] {
        let mut out = [zeroed(); 4];
        let mut count = 99;
        let rc = unsafe {
            convtune_lookup_candidates_str(
                line.as_ptr(),
                c"sm_90".as_ptr(),
                db.as_ptr(),
                deterministic,
                out.as_mut_ptr(),
                out.len(),
                &mut count,
            )
        };
        assert_eq!(rc, 0, "{}", last_error());
        assert!((2..=4).contains(&count), "{count} candidates");
        let configs: Vec<PerfConfig> = out[..count]
            .iter()
            .map(|c| {
                assert_eq!(text(&c.problem_key), problem.key());
                assert!(!text(&c.reason).is_empty());
                let cfg: PerfConfig = text(&c.config).parse().unwrap();
                assert_eq!(config::read_fields(c).unwrap(), cfg);
                cfg
            })
            .collect();
        let unique: std::collections::HashSet<_> = configs.iter().collect();
        assert_eq!(unique.len(), count, "a config listed twice: {configs:?}");
        if deterministic == 0 {
            assert_eq!(text(&out[0].config), text(&one.config));
        } else {
            assert!(
                configs
                    .iter()
                    .all(|c| !c.adds_by_atomics(problem.direction())),
                "{configs:?}"
            );
        }
    }
    // The struct spelling answers the same list.
    let p = seed_003_struct(c"NHWC");
    let (mut a, mut b) = ([zeroed(); 3], [zeroed(); 3]);
    let (mut na, mut nb) = (0, 0);
    let seed = c"convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 \
                 -j 1 -g 1 -F 2 --layout NHWC";
    let rc = unsafe {
        convtune_lookup_candidates(
            &p,
            c"sm_90".as_ptr(),
            db.as_ptr(),
            0,
            a.as_mut_ptr(),
            3,
            &mut na,
        )
    };
    assert_eq!(rc, 0, "{}", last_error());
    let rc = unsafe {
        convtune_lookup_candidates_str(
            seed.as_ptr(),
            c"sm_90".as_ptr(),
            db.as_ptr(),
            0,
            b.as_mut_ptr(),
            3,
            &mut nb,
        )
    };
    assert_eq!(rc, 0, "{}", last_error());
    assert_eq!(na, nb);
    for (x, y) in a[..na].iter().zip(&b[..nb]) {
        assert_eq!(text(&x.config), text(&y.config));
    }
    assert_eq!(
        text(&a[0].config),
        seed_003_shipped().to_string(),
        "exact entry first"
    );
}

/// A capacity outside 1..=CONVTUNE_MAX_CANDIDATES and NULL outputs are errors that say so;
/// the header's constant is the library's.
#[test]
fn candidate_lookups_refuse_bad_buffers() {
    let db = no_user_db();
    let line = c"conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1";
    let mut out = [zeroed(); 2];
    let mut count = 0;
    let call = |out: *mut ConfigC, capacity, count: *mut usize| unsafe {
        convtune_lookup_candidates_str(
            line.as_ptr(),
            c"sm_90".as_ptr(),
            db.as_ptr(),
            0,
            out,
            capacity,
            count,
        )
    };
    assert_eq!(
        call(out.as_mut_ptr(), 0, &mut count),
        Status::Buffer as c_int
    );
    assert!(last_error().contains("capacity 0"), "{}", last_error());
    let too_many = convtune::lookup::MAX_CANDIDATES + 1;
    assert_eq!(
        call(out.as_mut_ptr(), too_many, &mut count),
        Status::Buffer as c_int
    );
    assert_eq!(
        call(out.as_mut_ptr(), 2, std::ptr::null_mut()),
        Status::Null as c_int
    );
    assert_eq!(
        call(std::ptr::null_mut(), 2, &mut count),
        Status::Null as c_int
    );
    assert!(HEADER.contains(&format!(
        "#define CONVTUNE_MAX_CANDIDATES {}\n",
        convtune::lookup::MAX_CANDIDATES
    )));
    assert!(HEADER.contains(&format!(
        "#define CONVTUNE_FIRST_USE_CANDIDATES {}\n",
        convtune::lookup::FIRST_USE_CANDIDATES
    )));
}

/// A second round from the first round's times: new configs, none measured; bad input is an
/// error that says what; the header's constant is the library's.
#[test]
fn second_round_takes_times_and_refuses_bad_input() {
    let db = no_user_db();
    let line = c"conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1";
    let mut first = [zeroed(); 4];
    let mut n = 0;
    let rc = unsafe {
        convtune_lookup_candidates_str(
            line.as_ptr(),
            c"sm_90".as_ptr(),
            db.as_ptr(),
            0,
            first.as_mut_ptr(),
            4,
            &mut n,
        )
    };
    assert_eq!(rc, 0, "{}", last_error());
    let configs: Vec<*const c_char> = first[..n].iter().map(|c| c.config.as_ptr()).collect();
    let times: Vec<f64> = (0..n).map(|i| 10.0 + i as f64).collect();
    let mut out = [zeroed(); convtune::lookup::SECOND_ROUND_CANDIDATES];
    // (status, count)
    let call = |configs: *const *const c_char, times: *const f64, measured, out: *mut ConfigC| {
        let mut count = usize::MAX;
        let rc = unsafe {
            convtune_second_round_str(
                line.as_ptr(),
                c"sm_90".as_ptr(),
                0,
                configs,
                times,
                measured,
                out,
                convtune::lookup::SECOND_ROUND_CANDIDATES,
                &mut count,
            )
        };
        (rc, count)
    };
    let (rc, count) = call(configs.as_ptr(), times.as_ptr(), n, out.as_mut_ptr());
    assert_eq!(rc, 0, "{}", last_error());
    assert_eq!(count, convtune::lookup::SECOND_ROUND_CANDIDATES);
    let measured: Vec<String> = first[..n].iter().map(|c| text(&c.config)).collect();
    for c in &out[..count] {
        assert!(!measured.contains(&text(&c.config)), "{}", text(&c.config));
        assert!(text(&c.reason).contains("second round"));
    }
    // All failed: nothing to search around.
    let failed = vec![f64::NAN; n];
    let mut spare = [zeroed(); convtune::lookup::SECOND_ROUND_CANDIDATES];
    assert_eq!(
        call(configs.as_ptr(), failed.as_ptr(), n, spare.as_mut_ptr()),
        (0, 0)
    );
    let bad = [c"v1:bm=7".as_ptr()];
    assert_eq!(
        call(bad.as_ptr(), times.as_ptr(), 1, spare.as_mut_ptr()).0,
        Status::Config as c_int
    );
    assert!(last_error().contains("configs[0]"), "{}", last_error());
    assert_eq!(
        call(null(), null(), 1, spare.as_mut_ptr()).0,
        Status::Null as c_int
    );
    assert!(HEADER.contains(&format!(
        "#define CONVTUNE_SECOND_ROUND_CANDIDATES {}\n",
        convtune::lookup::SECOND_ROUND_CANDIDATES
    )));
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

const HEADER: &str = include_str!("../include/convtune.h");

/// The text between `start` and `end` in the header.
fn header_part<'a>(start: &str, end: &str) -> &'a str {
    let from = HEADER
        .find(start)
        .unwrap_or_else(|| panic!("header lacks {start:?}"))
        + start.len();
    let len = HEADER[from..]
        .find(end)
        .unwrap_or_else(|| panic!("header lacks {end:?}"));
    &HEADER[from..from + len]
}

fn without_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = &rest[i + rest[i..].find("*/").expect("closed comment") + 2..];
    }
    out + rest
}

#[test]
fn the_header_config_struct_has_every_declared_field_in_order() {
    let body = without_comments(header_part(
        "typedef struct convtune_config {",
        "} convtune_config;",
    ));
    let mut members = Vec::new();
    for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let mut words = decl.splitn(2, char::is_whitespace);
        let (ty, names) = (words.next().unwrap(), words.next().unwrap_or_default());
        for name in names.split(',') {
            members.push((ty, name.trim().split('[').next().unwrap().to_string()));
        }
    }
    let tuning: Vec<_> = members.iter().take_while(|(_, n)| n != "source").collect();
    let names: Vec<&str> = tuning.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        Field::NAMES,
        "convtune.h's convtune_config must declare every field of src/config/fields.rs, in \
         order, before `source`"
    );
    for ((ty, name), f) in tuning.iter().zip(Field::ALL) {
        let want = if f.domain().is_number() {
            "uint32_t"
        } else {
            "int32_t"
        };
        assert_eq!(*ty, want, "member {name}");
    }
}

#[test]
fn the_header_enums_name_every_value_of_the_named_fields() {
    for f in Field::ALL {
        let Domain::Named(names) = f.domain() else {
            continue;
        };
        let tag = format!("typedef enum convtune_{} {{", f.name());
        let body = header_part(&tag, &format!("}} convtune_{};", f.name()));
        let got: Vec<(u32, String)> = body
            .lines()
            .filter(|l| l.contains('='))
            .map(|l| {
                let value = l.split('=').nth(1).unwrap();
                let value: u32 = value
                    .trim_start()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap_or_else(|_| panic!("{}: {l}", f.name()));
                let comment = l.split("/*").nth(1).unwrap_or_default().trim();
                let spelled = comment.split([':', '*']).next().unwrap().trim().to_string();
                (value, spelled)
            })
            .collect();
        let want: Vec<(u32, String)> = names
            .iter()
            .zip(0..)
            .map(|(n, i)| (i, format!("{}={n}", f.key())))
            .collect();
        assert_eq!(got, want, "enum convtune_{} in convtune.h", f.name());
    }
}

#[test]
fn every_shipped_config_round_trips_through_the_struct() {
    let mut seen = 0;
    for arch in convtune::db::system_archs() {
        let db = convtune::db::system(arch).unwrap().unwrap();
        for e in db.entries() {
            let cfg: PerfConfig = e.config.parse().unwrap();
            let mut c = zeroed();
            config::write_fields(&cfg, &mut c);
            assert_eq!(config::read_fields(&c).unwrap(), cfg, "{}", e.config);
            let mut buf = [0 as c_char; CONFIG_LEN];
            let rc = unsafe { convtune_config_format(&c, buf.as_mut_ptr(), buf.len()) };
            assert_eq!(rc, 0, "{}", last_error());
            assert_eq!(text(&buf).parse::<PerfConfig>().unwrap(), cfg);
            assert_eq!(text(&buf), cfg.to_string());
            seen += 1;
        }
    }
    assert!(seen > 30, "{seen} shipped entries");
}

#[test]
fn the_new_fields_come_back_from_a_lookup() {
    let db = no_user_db();
    // A shipped split-K entry that adds its slices in the kernel, loaded warp-specialised.
    let line = c"convbfp16 -F 4 -n 32 -c 512 -H 28 -W 28 -k 1024 -y 1 -x 1 -p 0 -q 0 -u 2 -v 2 -l 1 -j 1 -g 1 -I NHWGC -f GKYXC -O NHWGC";
    let mut out = zeroed();
    let rc =
        unsafe { convtune_lookup_str(line.as_ptr(), c"sm_90".as_ptr(), db.as_ptr(), &mut out) };
    assert_eq!(rc, 0, "{}", last_error());
    assert_eq!(out.source, 0, "{}", text(&out.reason));
    assert!(
        text(&out.config).ends_with("red=fixup,ld=ws"),
        "{}",
        text(&out.config)
    );
    // The struct's split-K is the entry's `sk` (whatever the shipped re-tune chose).
    let sk: u32 = text(&out.config)
        .split(',')
        .find_map(|f| f.strip_prefix("sk="))
        .and_then(|v| v.parse().ok())
        .expect("the config names its split-K");
    assert!(sk > 1, "{}", text(&out.config));
    assert_eq!((out.split_k, out.red, out.ld), (sk, 1, 2));
    let line = CString::new(SEED_003).unwrap();
    let rc =
        unsafe { convtune_lookup_str(line.as_ptr(), c"sm_90".as_ptr(), db.as_ptr(), &mut out) };
    assert_eq!(rc, 0, "{}", last_error());
    assert_eq!((out.red, out.ld, out.persistent, out.xf), (0, 2, 1, 0));
}

#[test]
fn format_refuses_values_outside_a_field_and_short_buffers() {
    let cfg = seed_003_shipped();
    let mut c = zeroed();
    config::write_fields(&cfg, &mut c);
    let mut buf = [0 as c_char; CONFIG_LEN];
    c.ld = 4;
    let rc = unsafe { convtune_config_format(&c, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(rc, Status::Config as c_int);
    assert!(last_error().contains("`ld`"), "{}", last_error());
    c.ld = 0;
    c.stages = 0;
    let rc = unsafe { convtune_config_format(&c, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(rc, Status::Config as c_int);
    assert!(last_error().contains("`stages`"), "{}", last_error());
    c.stages = cfg.stages;
    let rc = unsafe { convtune_config_format(&c, buf.as_mut_ptr(), 10) };
    assert_eq!(rc, Status::Buffer as c_int);
    assert!(last_error().contains("needs"), "{}", last_error());
    let rc = unsafe { convtune_config_format(&c, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(rc, 0);
    let cp = PerfConfig {
        ld: convtune::config::LoadPath::Cp,
        ..cfg
    };
    assert_eq!(text(&buf), cp.to_string());
}

/// Seed 003's kernel as `convtune compile --manifest` writes it (the maps only, and a kernel
/// without maps after it).
const SEED_003_MANIFEST: &str = r#"{"manifest_version": 1, "kernels": [
  {"name": "convtune_gemm0", "tensor_maps": [
    {"index": 4, "tensor": "w", "map": {"boxes": [64, 64, 1, 1, 1], "dims": [4096, 2048, 1, 1, 1],
     "dtype": "BF16", "offset": 0, "rank": 2, "strides": [8192, 0, 0, 0], "swizzle128": true}},
    {"index": 5, "tensor": "y", "map": {"boxes": [64, 128, 1, 1, 1], "dims": [2048, 256, 1, 16, 1],
     "dtype": "BF16", "im2col": {"element_strides": [1, 1, 1, 1, 1], "lower": [0, 0, 0],
     "upper": [1, 0, 0]}, "offset": 0, "rank": 4, "strides": [4096, 1048576, 1048576, 0],
     "swizzle128": true}}]},
  {"name": "convtune_zero"}]}"#;

#[test]
fn manifest_tensor_maps_give_the_encode_calls_and_offsets() {
    let json = CString::new(SEED_003_MANIFEST).unwrap();
    let mut maps = [TensorMapC::default(); 4];
    let mut count = 99;
    let rc = unsafe {
        convtune_manifest_tensor_maps(json.as_ptr(), 0, maps.as_mut_ptr(), 4, &mut count)
    };
    assert_eq!(rc, 0, "{}", last_error());
    assert_eq!(count, 2);
    let (w, y) = (maps[0], maps[1]);
    assert_eq!(
        (w.param_index, w.param_offset, w.tensor, w.function),
        (4, 64, 1, 0)
    );
    assert_eq!(
        (w.data_type, w.rank, w.swizzle, w.l2_promotion),
        (9, 2, 3, 3)
    );
    assert_eq!(
        (&w.global_dim[..2], w.global_strides[0]),
        (&[4096, 2048][..], 8192)
    );
    assert_eq!((w.box_dim, w.element_strides), ([64, 64, 1, 1, 1], [1; 5]));
    assert_eq!(
        (y.param_index, y.param_offset, y.tensor, y.function),
        (5, 192, 2, 1)
    );
    assert_eq!((y.channels_per_pixel, y.pixels_per_column), (64, 128));
    assert_eq!(y.pixel_box_upper_corner, [1, 0, 0]);
    assert_eq!(y.box_dim, [0; 5]);
    assert_eq!(
        std::mem::size_of::<TensorMapC>(),
        convtune_tensor_map_size()
    );

    let rc = unsafe {
        convtune_manifest_tensor_maps(json.as_ptr(), 1, std::ptr::null_mut(), 0, &mut count)
    };
    assert_eq!((rc, count), (0, 0), "{}", last_error());
    let rc = unsafe {
        convtune_manifest_tensor_maps(json.as_ptr(), 0, maps.as_mut_ptr(), 1, &mut count)
    };
    assert_eq!((rc, count), (Status::Buffer as c_int, 2));
    let rc = unsafe {
        convtune_manifest_tensor_maps(json.as_ptr(), 2, maps.as_mut_ptr(), 4, &mut count)
    };
    assert_eq!(rc, Status::Manifest as c_int);
    assert!(last_error().contains("kernel 2"), "{}", last_error());
    let bad = CString::new(SEED_003_MANIFEST.replace("\"index\": 5", "\"index\": 7")).unwrap();
    let rc =
        unsafe { convtune_manifest_tensor_maps(bad.as_ptr(), 0, maps.as_mut_ptr(), 4, &mut count) };
    assert_eq!(rc, Status::Manifest as c_int);
    assert!(last_error().contains("index"), "{}", last_error());
    let rc = unsafe {
        convtune_manifest_tensor_maps(c"{}".as_ptr(), 0, maps.as_mut_ptr(), 4, &mut count)
    };
    assert_eq!(rc, Status::Manifest as c_int);
}
