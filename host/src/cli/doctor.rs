//! `weir doctor [LANG...] [--install]`: whether `weir build` can build each
//! guest language on this machine, what it found, and what to do when it
//! cannot. `--install` installs now what the first build would.

use std::process::ExitCode;

use weir::build::toolchain::Readiness;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    C,
    Go,
    Python,
    Js,
}

impl Lang {
    fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::C => "c",
            Lang::Go => "go",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The languages to check (default: all). With languages named, the
    /// exit status is 1 unless every one of them is ready.
    #[arg(value_enum)]
    langs: Vec<Lang>,
    /// Install what weir can install (componentizers, the Rust target, Go)
    /// instead of waiting for the first build.
    #[arg(long)]
    install: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let tools = super::build::toolchains()?;
    let wanted = |name: &str| a.langs.is_empty() || a.langs.iter().any(|l| l.name() == name);
    if a.install {
        for lang in a.langs.iter().copied() {
            install(&tools, lang)?;
        }
        if a.langs.is_empty() {
            for lang in [Lang::Rust, Lang::Go, Lang::Python, Lang::Js] {
                // Every language a user might not have: report, go on.
                if let Err(e) = install(&tools, lang) {
                    eprintln!("weir: {}: {e:#}", lang.name());
                }
            }
        }
    }
    println!("tools cache: {}", tools.root().display());
    let mut all_ready = true;
    for report in tools.report().into_iter().filter(|r| wanted(r.language)) {
        let (status, detail) = match report.readiness {
            Readiness::Ready(d) => ("ready", d),
            Readiness::Installable(d) => {
                all_ready = false;
                ("install", d)
            }
            Readiness::Missing(d) => {
                all_ready = false;
                ("missing", d)
            }
        };
        println!("{:<7} {status:<8} {detail}", report.language);
    }
    Ok(if a.langs.is_empty() || all_ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn install(tools: &weir::build::toolchain::Toolchains, lang: Lang) -> anyhow::Result<()> {
    match lang {
        Lang::Rust => tools.rust_target(std::path::Path::new("."))?,
        Lang::C => {}
        Lang::Go => {
            tools.go()?;
        }
        Lang::Python => {
            tools.componentize_py()?;
        }
        Lang::Js => {
            tools.componentize_js()?;
        }
    }
    Ok(())
}
