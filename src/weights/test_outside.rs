//! A file outside memory for tests, as a page's `Uint8Array` is, recording each range read.

use std::ops::Range;
use std::sync::Mutex;

use super::ByteSource;
use crate::Result;

#[derive(Debug)]
pub(crate) struct Outside {
    pub bytes: Vec<u8>,
    pub reads: Mutex<Vec<Range<usize>>>,
}

impl Outside {
    pub fn new(bytes: Vec<u8>) -> Self {
        Outside {
            bytes,
            reads: Mutex::default(),
        }
    }
}

impl ByteSource for Outside {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn read(&self, range: Range<usize>) -> Result<Vec<u8>> {
        self.reads.lock().unwrap().push(range.clone());
        Ok(self.bytes[range].to_vec())
    }
}
