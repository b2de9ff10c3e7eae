use super::*;
use crate::testing::reset_state;

fn key(i: u32) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

#[test]
fn ranges_answers_each_range_whole_past_pages_and_the_call_limit() {
    reset_state();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..30_000).map(|i| (key(i), key(i * 2))).collect();
    let borrowed: Vec<(&[u8], &[u8])> = entries.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    put_many(&borrowed);
    // Twelve ranges of 1,500 entries (over a page each, 18,000 in all:
    // past one call's 10,000), an empty one, and one past the end.
    let mut asked: Vec<(Vec<u8>, Vec<u8>)> = (0..12)
        .map(|r| (key(r * 2000), key(r * 2000 + 1500)))
        .collect();
    asked.push((key(5), key(5)));
    asked.push((key(29_990), key(40_000)));
    let borrowed: Vec<(&[u8], &[u8])> = asked.iter().map(|(s, e)| (&s[..], &e[..])).collect();
    let got = ranges(&borrowed);
    assert_eq!(got.len(), asked.len());
    for ((start, end), entries) in asked.iter().zip(&got) {
        let want: Vec<(Vec<u8>, Vec<u8>)> = range(start.clone(), end.clone()).collect();
        assert_eq!(entries, &want);
    }
    assert_eq!(got[0].len(), 1500);
    assert_eq!(got[12].len(), 0);
    assert_eq!(got[13].len(), 10);
    assert_eq!(got[1][0], (key(2000), key(4000)));
}

#[test]
fn expire_many_registers_each_expiry() {
    reset_state();
    put(b"a", b"1");
    put(b"b", b"2");
    expire_many(TimeDomain::EventTime, &[(b"a", 10), (b"b", 20)]);
    crate::testing::set_watermark(Some(15));
    crate::testing::fire_timers(&mut Nothing).unwrap();
    assert_eq!(get(b"a"), None);
    assert_eq!(get(b"b"), Some(b"2".to_vec()));
}

struct Nothing;

impl crate::Transform for Nothing {
    fn init(_: &crate::Config) -> Result<Self, String> {
        Ok(Nothing)
    }
    fn process(
        &mut self,
        _: &crate::Record<'_>,
        _: &mut crate::Output<'_, '_>,
    ) -> Result<(), crate::RecordError> {
        Ok(())
    }
}
