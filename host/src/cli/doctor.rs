//! `weir doctor [LANG...] [--install]`: whether `weir build` can build each
//! guest language on this machine, what it found, and what to do when it
//! cannot. `--install` installs now what the first build would.

use std::process::ExitCode;

use weir::build::toolchain::Readiness;

use super::Lang;

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
        let named = !a.langs.is_empty();
        let langs = if named {
            a.langs.clone()
        } else {
            <Lang as clap::ValueEnum>::value_variants().to_vec()
        };
        for lang in langs {
            match install(&tools, lang) {
                Err(e) if named => return Err(e),
                // All languages: each one a user may not have; say, go on.
                Err(e) => eprintln!("weir: {}: {e:#}", lang.name()),
                Ok(()) => {}
            }
        }
    }
    println!("tools cache: {}", tools.root().display());
    let mut all_ready = true;
    for report in tools.report(wanted) {
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
