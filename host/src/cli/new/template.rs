//! What `weir new --template` starts a project from: the transform and its
//! unit test in each language, and sample records with the output they
//! give and the `weir test` command that checks it. The window and join
//! templates are the `window-count` and `orders-payments` examples, so the
//! golden suite that checks those across languages checks the templates.

use super::Lang;

/// The kinds of transform a project can start as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Template {
    /// One output per record: uppercase each value.
    Map,
    /// Keep or drop: JSON orders with an `amount` of at least 10.
    Filter,
    /// Count JSON events per `key` in tumbling 10-second event-time windows.
    Window,
    /// Join `orders` with their `payments` on `order_id` within a minute.
    Join,
}

/// A file the template writes, by its path in the project.
pub struct TemplateFile {
    pub path: &'static str,
    pub text: &'static str,
}

/// A `TemplateFile` literal (a `const fn` call would not be promoted to
/// the `'static` slices below).
macro_rules! file {
    ($path:expr, $text:expr) => {
        TemplateFile {
            path: $path,
            text: $text,
        }
    };
}

impl Template {
    /// The sample records and the output they give, under `sample/`.
    pub fn samples(self) -> &'static [TemplateFile] {
        match self {
            Template::Map => &[
                file!(
                    "sample/input.txt",
                    include_str!("scaffold/sample/map/input.txt")
                ),
                file!(
                    "sample/expected.txt",
                    include_str!("scaffold/sample/map/expected.txt")
                ),
            ],
            Template::Filter => &[
                file!(
                    "sample/orders.jsonl",
                    include_str!("scaffold/sample/filter/orders.jsonl")
                ),
                file!(
                    "sample/expected.jsonl",
                    include_str!("scaffold/sample/filter/expected.jsonl")
                ),
            ],
            Template::Window => &[
                file!(
                    "sample/events.jsonl",
                    include_str!("scaffold/sample/window/events.jsonl")
                ),
                file!(
                    "sample/expected.jsonl",
                    include_str!("scaffold/sample/window/expected.jsonl")
                ),
            ],
            Template::Join => &[
                file!(
                    "sample/orders.jsonl",
                    include_str!("scaffold/sample/join/orders.jsonl")
                ),
                file!(
                    "sample/payments.jsonl",
                    include_str!("scaffold/sample/join/payments.jsonl")
                ),
                file!(
                    "sample/expected.jsonl",
                    include_str!("scaffold/sample/join/expected.jsonl")
                ),
            ],
        }
    }

    /// The `weir test` arguments after the component that run the samples
    /// and compare with the expected output: windows and joins key their
    /// state and read event time from the records, as their pipelines do.
    pub fn test_args(self) -> &'static str {
        match self {
            Template::Map => "--input sample/input.txt --expect sample/expected.txt",
            Template::Filter => "--input sample/orders.jsonl --expect sample/expected.jsonl",
            Template::Window => {
                "--key-field key --event-time ts --input sample/events.jsonl --expect sample/expected.jsonl"
            }
            Template::Join => {
                "--key-field order_id --event-time ts --input orders=sample/orders.jsonl --input payments=sample/payments.jsonl --expect sample/expected.jsonl"
            }
        }
    }

    /// The transform and its unit test in `lang` (Rust's test is in the
    /// transform's file, as Rust's unit tests are).
    pub fn sources(self, lang: Lang) -> &'static [TemplateFile] {
        use Template::*;
        match (lang, self) {
            (Lang::Rust, Map) => &[file!(
                "src/lib.rs",
                include_str!("scaffold/rust/map.rs.tmpl")
            )],
            (Lang::Rust, Filter) => &[file!(
                "src/lib.rs",
                include_str!("scaffold/rust/filter.rs.tmpl")
            )],
            (Lang::Rust, Window) => &[file!(
                "src/lib.rs",
                include_str!("../../../../examples/rust/window-count/src/lib.rs")
            )],
            (Lang::Rust, Join) => &[file!(
                "src/lib.rs",
                include_str!("../../../../examples/rust/orders-payments/src/lib.rs")
            )],
            (Lang::Python, Map) => &[
                file!("app.py", include_str!("scaffold/python/map.py.tmpl")),
                file!(
                    "test_app.py",
                    include_str!("scaffold/python/test_map.py.tmpl")
                ),
            ],
            (Lang::Python, Filter) => &[
                file!("app.py", include_str!("scaffold/python/filter.py.tmpl")),
                file!(
                    "test_app.py",
                    include_str!("scaffold/python/test_filter.py.tmpl")
                ),
            ],
            (Lang::Python, Window) => &[
                file!(
                    "app.py",
                    include_str!("../../../../examples/python/window-count/app.py")
                ),
                file!(
                    "test_app.py",
                    include_str!("scaffold/python/test_window.py.tmpl")
                ),
            ],
            (Lang::Python, Join) => &[
                file!(
                    "app.py",
                    include_str!("../../../../examples/python/orders-payments/app.py")
                ),
                file!(
                    "test_app.py",
                    include_str!("scaffold/python/test_join.py.tmpl")
                ),
            ],
            (Lang::Js, Map) => &[
                file!("app.js", include_str!("scaffold/js/map.js.tmpl")),
                file!("app.test.js", include_str!("scaffold/js/map.test.js.tmpl")),
            ],
            (Lang::Js, Filter) => &[
                file!("app.js", include_str!("scaffold/js/filter.js.tmpl")),
                file!(
                    "app.test.js",
                    include_str!("scaffold/js/filter.test.js.tmpl")
                ),
            ],
            (Lang::Js, Window) => &[
                file!(
                    "app.js",
                    include_str!("../../../../examples/js/window-count/app.js")
                ),
                file!(
                    "app.test.js",
                    include_str!("scaffold/js/window.test.js.tmpl")
                ),
            ],
            (Lang::Js, Join) => &[
                file!(
                    "app.js",
                    include_str!("../../../../examples/js/orders-payments/app.js")
                ),
                file!("app.test.js", include_str!("scaffold/js/join.test.js.tmpl")),
            ],
            (Lang::Go, Map) => &[
                file!("main.go", include_str!("scaffold/go/map.go.tmpl")),
                file!("main_test.go", include_str!("scaffold/go/map_test.go.tmpl")),
            ],
            (Lang::Go, Filter) => &[
                file!("main.go", include_str!("scaffold/go/filter.go.tmpl")),
                file!(
                    "main_test.go",
                    include_str!("scaffold/go/filter_test.go.tmpl")
                ),
            ],
            (Lang::Go, Window) => &[
                file!(
                    "main.go",
                    include_str!("../../../../examples/go/window-count/main.go")
                ),
                file!(
                    "main_test.go",
                    include_str!("scaffold/go/window_test.go.tmpl")
                ),
            ],
            (Lang::Go, Join) => &[
                file!(
                    "main.go",
                    include_str!("../../../../examples/go/orders-payments/main.go")
                ),
                file!(
                    "main_test.go",
                    include_str!("scaffold/go/join_test.go.tmpl")
                ),
            ],
            (Lang::C, Map) => &[
                file!("src/transform.c", include_str!("scaffold/c/map.c.tmpl")),
                file!(
                    "test/transform_test.c",
                    include_str!("scaffold/c/map_test.c.tmpl")
                ),
            ],
            (Lang::C, Filter) => &[
                file!("src/transform.c", include_str!("scaffold/c/filter.c.tmpl")),
                file!(
                    "test/transform_test.c",
                    include_str!("scaffold/c/filter_test.c.tmpl")
                ),
            ],
            (Lang::C, Window) => &[
                file!(
                    "src/transform.c",
                    include_str!("../../../../examples/c/window-count/transform.c")
                ),
                file!(
                    "test/transform_test.c",
                    include_str!("scaffold/c/window_test.c.tmpl")
                ),
            ],
            (Lang::C, Join) => &[
                file!(
                    "src/transform.c",
                    include_str!("../../../../examples/c/orders-payments/transform.c")
                ),
                file!(
                    "test/transform_test.c",
                    include_str!("scaffold/c/join_test.c.tmpl")
                ),
            ],
        }
    }

    /// What a Rust project needs beyond the SDK with its `json` feature:
    /// the join example reads its optional users table with the SDK's
    /// `lookup` and writes rows with serde.
    pub fn rust_dependencies(self) -> RustDependencies {
        match self {
            Template::Join => RustDependencies {
                features: r#"["json", "lookup"]"#,
                crates: "serde = { version = \"1\", features = [\"derive\"] }\nserde_json = \"1\"\n",
            },
            _ => RustDependencies {
                features: r#"["json"]"#,
                crates: "",
            },
        }
    }
}

/// The SDK's features and the other crates a Rust template depends on.
pub struct RustDependencies {
    pub features: &'static str,
    pub crates: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// Every template names in its test command exactly the sample files it
    /// writes, so the command a new project prints runs as it stands.
    #[test]
    fn test_commands_read_the_samples_written() {
        for t in Template::value_variants() {
            let args = t.test_args();
            let mut named: Vec<&str> = args
                .split(' ')
                .filter(|a| a.contains("sample/"))
                .map(|a| a.rsplit('=').next().unwrap())
                .collect();
            let mut written: Vec<&str> = t.samples().iter().map(|f| f.path).collect();
            named.sort();
            written.sort();
            assert_eq!(named, written, "{t:?}");
        }
    }
}
