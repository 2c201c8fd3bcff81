//! Protobuf's wire format: reading a message's field occurrences and writing them.
//!
//! Invariants: reading never looks past the buffer it was given (a truncated or malformed
//! message is an error, never a panic); writing emits fields in the order it is asked to.

/// One field occurrence's raw value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32,
}

/// The field occurrences of a message, in order.
pub(super) struct Wire<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> Wire<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Wire { r: Reader { buf }, failed: false }
    }
}

impl<'a> Iterator for Wire<'a> {
    type Item = Result<(u32, Raw<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.buf.is_empty() {
            return None;
        }
        let item = self.r.field();
        self.failed = item.is_err();
        Some(item)
    }
}

pub(super) struct Reader<'a> {
    pub(super) buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn varint(&mut self) -> Result<u64, String> {
        let mut n: u64 = 0;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or("truncated varint")?;
            self.buf = rest;
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("varint too long".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err("truncated message".into());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<(u32, Raw<'a>), String> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        let v = match key & 7 {
            0 => Raw::Varint(self.varint()?),
            1 => Raw::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"))),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "length out of range")?;
                Raw::Len(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Raw::Fixed32
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        Ok((tag, v))
    }
}

/// Appends field occurrences to a message being written.
pub(super) struct Writer {
    pub(super) buf: Vec<u8>,
}

impl Writer {
    pub(super) fn new() -> Self {
        Writer { buf: Vec::new() }
    }

    fn key(&mut self, tag: u32, wire_type: u8) {
        self.varint((u64::from(tag) << 3) | u64::from(wire_type));
    }

    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.buf.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.buf.push(n as u8);
    }

    /// A varint field (integers as their two's complement, as protobuf's `int32`/`int64`).
    pub(super) fn int(&mut self, tag: u32, n: i64) {
        self.key(tag, 0);
        self.varint(n as u64);
    }

    pub(super) fn double(&mut self, tag: u32, d: f64) {
        self.key(tag, 1);
        self.buf.extend_from_slice(&d.to_bits().to_le_bytes());
    }

    /// A length-delimited field: bytes, text or an encoded message.
    pub(super) fn bytes(&mut self, tag: u32, b: &[u8]) {
        self.key(tag, 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
}
