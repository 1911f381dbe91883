//! `convtune replay`: score every strategy against recorded exhaustive runs, with no GPU.

use super::bad_input;
use convtune::lookup::QuickFile;
use convtune::search::{
    efficiency_all, efficiency_table, plot_efficiencies, quick_list, quick_list::quick_list_table,
    Recording,
};
use std::path::PathBuf;

/// Arguments of `convtune replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// Folder of recordings (`*.json`, see recordings/README.md).
    #[arg(default_value = "recordings")]
    dir: PathBuf,
    /// Write one convergence plot (SVG) per recording into this folder.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Seed of the randomised strategies.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also print the quick list (set cover within 0.93 of each problem's best), this many configs.
    #[arg(long, value_name = "N")]
    quick_list: Option<usize>,
    /// Write the quick lists (with --quick-list) as `DIR/<arch>.toml`, the files that
    /// `tuned-db/quick/` ships and lookups fall back to.
    #[arg(long, value_name = "DIR", requires = "quick_list")]
    write_quick: Option<PathBuf>,
}

/// Prints the efficiency table (and the quick list), writes the plots.
pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let recs = Recording::load_dir(&args.dir).map_err(bad_input)?;
    let mut rows = Vec::new();
    for (path, rec) in &recs {
        let prepared = rec.prepare().map_err(bad_input)?;
        let effs = efficiency_all(&prepared, args.seed)?;
        let label = format!(
            "{}{}",
            rec.problem,
            if rec.synthetic { " (synthetic)" } else { "" }
        );
        if let Some(dir) = &args.svg {
            super::out::create_dir(dir)?;
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            let out = dir.join(format!("{name}.svg"));
            super::out::write_file(&out, plot_efficiencies(&effs, &label).as_bytes())?;
        }
        rows.push((label, effs));
    }
    outln!("{}", efficiency_table(&rows));
    if let Some(n) = args.quick_list {
        let only: Vec<Recording> = recs.into_iter().map(|(_, r)| r).collect();
        let lists = quick_list(&only, n).map_err(bad_input)?;
        outln!("{}", quick_list_table(&lists));
        if let Some(dir) = &args.write_quick {
            super::out::create_dir(dir)?;
            let mut archs: Vec<&str> = lists.iter().map(|l| l.arch.as_str()).collect();
            archs.dedup();
            for arch in archs {
                let mine: Vec<_> = lists.iter().filter(|l| l.arch == arch).cloned().collect();
                let text = format!(
                    "# Quick list for {arch}: written by `convtune replay --quick-list {n} --write-quick`\n\
                     # from the recordings in recordings/. Lookups use it for problems no database tunes.\n{}",
                    toml::to_string(&QuickFile::from_lists(&mine))?
                );
                let out = dir.join(format!("{arch}.toml"));
                super::out::write_file(&out, text.as_bytes())?;
                errln!("wrote {}", out.display());
            }
        }
    }
    Ok(())
}
