//! Helpers shared by the memory-management unit tests.

/// A small deterministic xorshift generator, so randomized tests repeat exactly.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
