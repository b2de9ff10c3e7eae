//! Kafka's default partitioner hash (murmur2, seed 0x9747b28c), so a state
//! partition and a Kafka partition agree on where a key belongs: a topic
//! written by any producer with default settings, or by weir's own sinks,
//! is already partitioned the way the exchange would partition it.

const SEED: u32 = 0x9747_b28c;
const M: u32 = 0x5bd1_e995;
const R: u32 = 24;

/// The 32-bit murmur2 of `data`, as Kafka's Java client computes it.
pub fn murmur2(data: &[u8]) -> i32 {
    let mut h = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= (tail[2] as u32) << 16;
    }
    if tail.len() >= 2 {
        h ^= (tail[1] as u32) << 8;
    }
    if !tail.is_empty() {
        h ^= tail[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of `key` among `partitions`: Kafka's
/// `toPositive(murmur2(key)) % partitions`.
pub fn partition_of(key: &[u8], partitions: u32) -> u32 {
    (murmur2(key) as u32 & 0x7fff_ffff) % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors of Kafka's `UtilsTest.testMurmur2`.
    #[test]
    fn matches_the_kafka_java_client() {
        for (key, hash) in [
            (&b"21"[..], -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ] {
            assert_eq!(murmur2(key), hash, "{}", String::from_utf8_lossy(key));
        }
        // toPositive(-790332482) = 1357151166; 1357151166 % 50 = 16.
        assert_eq!(partition_of(b"foobar", 50), 16);
    }
}
