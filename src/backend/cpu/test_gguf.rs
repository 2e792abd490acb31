//! One-tensor GGUF files for the unit tests.

/// A GGUF file holding one tensor `w` of `rows` x `cols` of ggml type `ty` (its id), whose bytes are
/// `data`.
pub(super) fn one_tensor(ty: u32, rows: usize, cols: usize, data: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.push(b'w');
    b.extend(2u32.to_le_bytes());
    // ggml lists dimensions innermost first.
    b.extend((cols as u64).to_le_bytes());
    b.extend((rows as u64).to_le_bytes());
    b.extend(ty.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.resize(b.len().next_multiple_of(32), 0);
    b.extend_from_slice(data);
    b
}
