fn count(r: &weir_guest::Record<'_>) -> usize {
    r.value().len()
}
weir_guest::map!(count);

fn main() {}
