use super::*;

#[test]
fn embedded_spaces_load_and_have_the_expected_size() {
    for arch in Arch::ALL {
        let s = SearchSpace::default_for(&arch);
        assert_eq!(s.vendor, Some(arch.vendor));
        // NVIDIA lists four paths (mma = ["sync", "wg", "wg1", "dw"]), 16-wide block
        // tiles, the wgmma tile width 256 and split-K to 64; AMD only sync.
        let nv = arch.vendor == Vendor::Nvidia;
        let paths = s.params.mma.len() as u64;
        assert_eq!(paths, if nv { 4 } else { 1 });
        // NVIDIA also lists the split-K reductions (red = ["atomic", "fixup", "stream"]) and
        // stream-K's two cuts (cut = ["tile", "aligned"]).
        // NVIDIA: split-K without 8 and xf = ["none", "nhwc_out"] (the raw-point cap); AMD
        // lists no transform.
        // NVIDIA: stages without 1 (the cap again, with dw).
        let (blocks, warp_n, split_k, red, xf, stages, cut) = if nv {
            (5, 5, 6, 3, 2, 3, 2)
        } else {
            (4, 4, 4, 1, 1, 4, 1)
        };
        assert_eq!(
            s.raw_size(),
            blocks
                * blocks
                * 3
                * 4
                * warp_n
                * stages
                * 4
                * 4
                * 4
                * 2
                * split_k
                * 3
                * paths
                * red
                * xf
                * cut
        );
        assert_eq!(s.iter_raw().take(3).count(), 3);
    }
}

#[test]
fn raw_iterator_covers_the_product_once() {
    let mut s = SearchSpace::default_for(&Arch::SM_90);
    s.params.block_m = vec![32, 64];
    s.params.warp_n = vec![16];
    s.params.vec_b = vec![1, 2, 4];
    let all: Vec<_> = s.iter_raw().collect();
    assert_eq!(all.len() as u64, s.raw_size());
    let set: std::collections::BTreeSet<_> = all.iter().collect();
    assert_eq!(set.len(), all.len());
    assert!(all.iter().all(|c| s.contains(c)));
    assert_eq!(all[0].vec_c, 1);
    assert_eq!(all[1].vec_c, 2, "vc varies fastest");
}

fn err(text: &str) -> String {
    SearchSpace::from_toml(text, "t.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn errors_name_the_key_and_line() {
    let good = NVIDIA_TOML;
    let line_of = |needle: &str| good.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
    // Wrong type.
    let t = good.replace("block_k = [16, 32, 64]", "block_k = [16, \"x\", 64]");
    let e = err(&t);
    assert!(
        e.starts_with(&format!("t.toml:{}:", line_of("block_k"))),
        "{e}"
    );
    // Unknown key.
    let t = good.replace("raster = [1, 4, 8]", "rastr = [1, 4, 8]");
    let e = err(&t);
    assert!(
        e.contains("rastr") && e.starts_with(&format!("t.toml:{}:", line_of("raster"))),
        "{e}"
    );
    // Missing key: named.
    let t = good.replace("split_k = [1, 2, 4, 16, 32, 64]", "");
    assert!(err(&t).contains("split_k"), "{}", err(&t));
    // Bad values, with line.
    let t = good.replace("vec_b = [1, 2, 4, 8]", "vec_b = [1, 3]");
    assert_eq!(
        err(&t),
        format!(
            "t.toml:{}: key 'vec_b': value 3 is not a power of two",
            line_of("vec_b")
        )
    );
    let t = good.replace("block_m = [16, 32, 64, 128, 256]", "block_m = []");
    assert!(err(&t).contains("key 'block_m': the list is empty"));
    let t = good.replace("lds = [\"pad\", \"swz\"]", "lds = [\"pad\", \"xor\"]");
    assert!(err(&t).contains("key 'lds': 'xor' is not 'pad' or 'swz'"));
    let t = good.replace("min_warps = 1", "min_warps = 9");
    assert!(
        err(&t).contains("min_warps 9 is above max_warps 8"),
        "{}",
        err(&t)
    );
    // Not TOML at all.
    assert!(err("block_m = [").starts_with("t.toml:1:"));
}

#[test]
fn load_reads_a_narrowed_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narrow.toml");
    let text = AMD_TOML.replace("block_m = [32, 64, 128, 256]", "block_m = [128]");
    std::fs::write(&path, text).unwrap();
    let s = SearchSpace::load(&path).unwrap();
    assert_eq!(s.params.block_m, [128]);
    assert_eq!(
        s.raw_size() * 4,
        SearchSpace::default_for(&Arch::GFX90A).raw_size()
    );
    assert_eq!(s.constraints.max_warps, 4);
}

#[test]
fn huge_products_are_refused_not_wrapped() {
    // Issue 18 item 3: split_k = [1..4096] allocated 12 GB; every list at its maximum
    // wrapped the u64 product to 0 ("raw 0 legal 0").
    let all = |n: u32| format!("{:?}", (1..=n).collect::<Vec<_>>());
    let t = NVIDIA_TOML.replace(
        "split_k = [1, 2, 4, 16, 32, 64]",
        &format!("split_k = {}", all(4096)),
    );
    assert!(
        err(&t).contains("raw points; at most 536870912"),
        "{}",
        err(&t)
    );
    let mut t = NVIDIA_TOML.to_string();
    for key in [
        "block_m", "block_n", "block_k", "warp_m", "warp_n", "stages", "split_k", "raster",
    ] {
        let line = t.lines().find(|l| l.starts_with(key)).unwrap().to_string();
        t = t.replace(&line, &format!("{key} = {}", all(4096)));
    }
    assert!(err(&t).contains("more than 2^64 raw points"), "{}", err(&t));
    let mut s = SearchSpace::default_for(&Arch::SM_90);
    s.params.split_k = (1..=4096).collect();
    s.params.block_m = (1..=4096).collect();
    s.params.block_n = (1..=4096).collect();
    s.params.warp_m = (1..=4096).collect();
    s.params.warp_n = (1..=4096).collect();
    s.params.block_k = (1..=4096).collect();
    assert_eq!(s.raw_size(), u64::MAX);
}

#[test]
fn special_files_are_refused() {
    let e = SearchSpace::load(Path::new("/dev/zero")).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[test]
fn load_reports_missing_file() {
    let e = SearchSpace::load(Path::new("/nonexistent/space.toml")).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("cannot read search space /nonexistent/space.toml"));
}
