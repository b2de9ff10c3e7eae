//! A guest run as users run one over files: a files source into a files
//! sink with dead letters, through the real `weir run`.

use std::path::Path;

use crate::{grants_line, weir};

/// What [`run_files_to_files`] left: the committed output's and dead
/// letters' lines (as `weir files` prints them) and `weir run`'s stderr.
pub struct FilesRun {
    pub output: String,
    pub dead_letters: String,
    pub log: String,
}

/// `weir run` over `input` (one record a line) as a user runs a pipeline
/// in `dir`: a files source, `component` (a path), `on-error =
/// "dead-letter"`, files sinks for the output and the dead letters
/// (`format = "values"`), `available-now`. The run must succeed.
pub fn run_files_to_files(dir: &Path, lang: &str, component: &Path, input: &str) -> FilesRun {
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/input.txt"), input).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "checkpoint = \"ckpt\"\n[[source]]\ntype = \"files\"\npath = \"in\"\nformat = \"raw\"\n[transform]\ncomponent = \"{}\"\non-error = \"dead-letter\"\n{}[sink.default]\ntype = \"files\"\npath = \"out\"\n[sink.dead-letter]\ntype = \"files\"\npath = \"dead\"\nformat = \"values\"\n[trigger]\ntype = \"available-now\"\n",
            component.display(),
            grants_line(lang)
        ),
    )
    .unwrap();
    let o = weir()
        .args(["run", "p.toml", "--progress", "none"])
        .current_dir(dir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{lang}: {log}");
    let files = |sink: &str| {
        let o = weir()
            .args(["files", sink])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{lang}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    FilesRun {
        output: files("out"),
        dead_letters: files("dead"),
        log,
    }
}
