//! Uppercase over the naive `list<record>` contract, for the encoding benchmark.

wit_bindgen::generate!({ world: "naive", path: "../../bench-wit" });

struct Naive;

impl Guest for Naive {
    fn process_naive(input: Vec<Rec>) -> Vec<Rec> {
        input
            .into_iter()
            .map(|mut r| {
                r.value.make_ascii_uppercase();
                r
            })
            .collect()
    }
}

export!(Naive);
