use weir_guest::{Output, Record, RecordError};

mod map_plain {
    fn f(r: &weir_guest::Record<'_>) -> Vec<u8> {
        r.value().to_vec()
    }
    weir_guest::map!(f);
}

mod map_fallible {
    fn f(r: &weir_guest::Record<'_>) -> Result<String, weir_guest::RecordError> {
        Ok(r.value_str()?.to_uppercase())
    }
    weir_guest::map!(f);
}

mod filter_plain {
    weir_guest::filter!(|r: &weir_guest::Record<'_>| !r.value().is_empty());
}

fn split(r: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    for part in r.value().split(|b| *b == b',') {
        out.emit(part);
    }
    Ok(())
}
weir_guest::flat_map!(split);

fn main() {}
