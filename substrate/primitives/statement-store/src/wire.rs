//! The wire format: a statement is SCALE `Vec<Field>`, fields in strictly increasing tag order.
//!
//! | tag | field | payload |
//! |---|---|---|
//! | 0 | proof | kind byte, signature, signer |
//! | 1 | decryption key | `[u8; 32]` |
//! | 2 | expiry | `u64` little endian, always written |
//! | 3 | channel | `[u8; 32]` |
//! | 4-7 | topics 1-4 | `[u8; 32]` each |
//! | 8 | data | compact length, bytes |
//!
//! The signed bytes are the same encoding without the field count and without the proof.

use crate::{
	Channel, DecryptionKey, Error, Proof, Result, Statement, Topic, MAX_STATEMENT_SIZE, MAX_TOPICS,
};
use codec::Encode;

const TAG_PROOF: u8 = 0;
const TAG_DECRYPTION_KEY: u8 = 1;
const TAG_EXPIRY: u8 = 2;
const TAG_CHANNEL: u8 = 3;
const TAG_TOPIC1: u8 = 4;
const TAG_TOPIC4: u8 = 7;
const TAG_DATA: u8 = 8;

impl Statement {
	/// The SCALE wire encoding.
	pub fn encode(&self) -> Vec<u8> {
		self.encoded(true)
	}

	/// The bytes a proof signs: the encoding without field count and proof.
	pub fn signature_material(&self) -> Vec<u8> {
		self.encoded(false)
	}

	/// Length of [`Statement::encode`]'s output, computed without encoding.
	pub fn encoded_size(&self) -> usize {
		let fields = self.field_count(true);
		let proof = match &self.proof {
			None => 0,
			Some(Proof::Sr25519 { .. } | Proof::Ed25519 { .. }) => 1 + 1 + 64 + 32,
			Some(Proof::Secp256k1Ecdsa { .. }) => 1 + 1 + 65 + 33,
		};
		let data = self.data.as_ref().map_or(0, |d| 1 + compact_len(d.len() as u32) + d.len());
		compact_len(fields)
			+ proof + self.decryption_key.map_or(0, |_| 33)
			+ 9 + self.channel.map_or(0, |_| 33)
			+ 33 * self.num_topics as usize
			+ data
	}

	/// Decode a complete statement: the whole of `bytes`, at most [`MAX_STATEMENT_SIZE`] long.
	///
	/// Use this for anything a peer or an app sends. Unlike the lenient [`codec::Decode`]
	/// impl, it refuses trailing bytes.
	pub fn from_bytes(bytes: &[u8]) -> Result<Statement> {
		let mut statement = Statement::new();
		decode_whole(bytes, &mut statement)?;
		Ok(statement)
	}

	fn field_count(&self, with_proof: bool) -> u32 {
		let present = |yes: bool| u32::from(yes);
		present(with_proof && self.proof.is_some())
			+ present(self.decryption_key.is_some())
			+ 1 + present(self.channel.is_some())
			+ u32::from(self.num_topics)
			+ present(self.data.is_some())
	}

	fn encoded(&self, with_proof: bool) -> Vec<u8> {
		let mut out = Vec::with_capacity(self.encoded_size());
		if with_proof {
			codec::Compact(self.field_count(true)).encode_to(&mut out);
			if let Some(proof) = &self.proof {
				out.push(TAG_PROOF);
				proof.encode_to(&mut out);
			}
		}
		if let Some(key) = &self.decryption_key {
			out.push(TAG_DECRYPTION_KEY);
			out.extend_from_slice(key);
		}
		out.push(TAG_EXPIRY);
		out.extend_from_slice(&self.expiry.to_le_bytes());
		if let Some(channel) = &self.channel {
			out.push(TAG_CHANNEL);
			out.extend_from_slice(channel);
		}
		for (index, topic) in self.topics().iter().enumerate() {
			out.push(TAG_TOPIC1 + index as u8);
			out.extend_from_slice(&topic.0);
		}
		if let Some(data) = &self.data {
			out.push(TAG_DATA);
			data.encode_to(&mut out);
		}
		out
	}
}

impl codec::Encode for Statement {
	fn size_hint(&self) -> usize {
		self.encoded_size()
	}

	fn encode(&self) -> Vec<u8> {
		self.encoded(true)
	}
}

/// Reads one statement and leaves any following bytes in the input, as upstream does, so a
/// `Vec<Statement>` decodes. Fields are checked exactly as [`Statement::from_bytes`] checks them.
impl codec::Decode for Statement {
	fn decode<I: codec::Input>(input: &mut I) -> core::result::Result<Self, codec::Error> {
		let mut statement = Statement::new();
		decode_fields(&mut Reader::new(input), &mut statement).map(|()| statement).map_err(|err| {
			match err {
				Error::Truncated { .. } => "statement: not enough data".into(),
				Error::UnknownField { .. } => "statement: unknown field tag".into(),
				Error::FieldOrder { .. } => {
					"statement: invalid field order or duplicate fields".into()
				}
				Error::UnknownProof { .. } => "statement: unknown proof kind".into(),
				Error::BadCompact { .. } => "statement: malformed compact integer".into(),
				_ => "statement: malformed encoding".into(),
			}
		})
	}
}

/// What a query reads of an encoded statement, borrowed from its bytes: the decryption key,
/// the topics and the data, without decoding the rest (proof, expiry, channel) into a
/// [`Statement`] or copying the data. [`Fields::of`] accepts exactly the encodings
/// [`Statement::from_bytes`] accepts, with the same errors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields<'a> {
	decryption_key: Option<DecryptionKey>,
	num_topics: u8,
	topics: [Topic; MAX_TOPICS],
	data: Option<&'a [u8]>,
}

impl<'a> Fields<'a> {
	/// Read the fields of a complete encoded statement.
	pub fn of(bytes: &'a [u8]) -> Result<Fields<'a>> {
		let mut fields = Fields::default();
		decode_whole(bytes, &mut fields)?;
		Ok(fields)
	}

	/// The key the statement is encrypted to, if any.
	pub fn decryption_key(&self) -> Option<DecryptionKey> {
		self.decryption_key
	}

	/// The topics, as [`Statement::topics`] gives them.
	pub fn topics(&self) -> &[Topic] {
		&self.topics[..usize::from(self.num_topics)]
	}

	/// The data, if any.
	pub fn data(&self) -> Option<&'a [u8]> {
		self.data
	}
}

/// Where [`decode_fields`] puts what it reads: a [`Statement`], or [`Fields`] borrowing from
/// the bytes. One walk for both, so that both accept and refuse the same encodings.
trait FieldSink<I: codec::Input> {
	fn proof(&mut self, proof: Proof);
	fn decryption_key(&mut self, key: DecryptionKey);
	fn expiry(&mut self, expiry: u64);
	fn channel(&mut self, channel: Channel);
	fn topic(&mut self, index: usize, topic: Topic);
	/// Take the `len` data bytes that follow in `reader`.
	fn data(&mut self, reader: &mut Reader<'_, I>, len: usize) -> Result<()>;
}

impl<I: codec::Input> FieldSink<I> for Statement {
	fn proof(&mut self, proof: Proof) {
		self.proof = Some(proof);
	}
	fn decryption_key(&mut self, key: DecryptionKey) {
		self.decryption_key = Some(key);
	}
	fn expiry(&mut self, expiry: u64) {
		self.expiry = expiry;
	}
	fn channel(&mut self, channel: Channel) {
		self.channel = Some(channel);
	}
	fn topic(&mut self, index: usize, topic: Topic) {
		self.set_topic(index, topic);
	}
	fn data(&mut self, reader: &mut Reader<'_, I>, len: usize) -> Result<()> {
		self.data = Some(reader.bytes(len)?);
		Ok(())
	}
}

impl<'a> FieldSink<&'a [u8]> for Fields<'a> {
	fn proof(&mut self, _: Proof) {}
	fn decryption_key(&mut self, key: DecryptionKey) {
		self.decryption_key = Some(key);
	}
	fn expiry(&mut self, _: u64) {}
	fn channel(&mut self, _: Channel) {}
	fn topic(&mut self, index: usize, topic: Topic) {
		crate::statement::place_topic(&mut self.topics, &mut self.num_topics, index, topic);
	}
	fn data(&mut self, reader: &mut Reader<'_, &'a [u8]>, len: usize) -> Result<()> {
		let rest: &'a [u8] = reader.input;
		if rest.len() < len {
			return Err(Error::Truncated { offset: reader.offset, needed: len });
		}
		let (data, after) = rest.split_at(len);
		*reader.input = after;
		reader.offset += len;
		self.data = Some(data);
		Ok(())
	}
}

/// Decode the whole of `bytes` into `sink`: at most [`MAX_STATEMENT_SIZE`], no trailing bytes.
fn decode_whole<'a, S: FieldSink<&'a [u8]>>(bytes: &'a [u8], sink: &mut S) -> Result<()> {
	if bytes.len() > MAX_STATEMENT_SIZE {
		return Err(Error::TooLarge { size: bytes.len(), max: MAX_STATEMENT_SIZE });
	}
	let mut input = bytes;
	decode_fields(&mut Reader::new(&mut input), sink)?;
	if !input.is_empty() {
		return Err(Error::TrailingBytes { count: input.len() });
	}
	Ok(())
}

fn decode_fields<I: codec::Input, S: FieldSink<I>>(
	reader: &mut Reader<'_, I>,
	sink: &mut S,
) -> Result<()> {
	let count = reader.compact_u32()?;
	let mut previous: Option<u8> = None;
	for _ in 0..count {
		let tag = reader.byte()?;
		if tag > TAG_DATA {
			return Err(Error::UnknownField { tag });
		}
		if let Some(previous) = previous.filter(|previous| tag <= *previous) {
			return Err(Error::FieldOrder { tag, previous });
		}
		previous = Some(tag);
		match tag {
			TAG_PROOF => sink.proof(reader.proof()?),
			TAG_DECRYPTION_KEY => sink.decryption_key(reader.array()?),
			TAG_EXPIRY => sink.expiry(u64::from_le_bytes(reader.array()?)),
			TAG_CHANNEL => sink.channel(reader.array()?),
			TAG_TOPIC1..=TAG_TOPIC4 => {
				sink.topic(usize::from(tag - TAG_TOPIC1), Topic(reader.array()?))
			}
			_ => {
				let len = reader.compact_u32()? as usize;
				sink.data(reader, len)?;
			}
		}
	}
	Ok(())
}

/// Number of bytes SCALE uses for `Compact<u32>` of `value`.
fn compact_len(value: u32) -> usize {
	match value {
		0..=0x3f => 1,
		0x40..=0x3fff => 2,
		0x4000..=0x3fff_ffff => 4,
		_ => 5,
	}
}

/// A byte reader that knows its offset, so every error can say where the bytes went wrong.
struct Reader<'a, I: codec::Input> {
	input: &'a mut I,
	offset: usize,
}

impl<'a, I: codec::Input> Reader<'a, I> {
	fn new(input: &'a mut I) -> Self {
		Reader { input, offset: 0 }
	}

	fn fill(&mut self, buf: &mut [u8]) -> Result<()> {
		self.input
			.read(buf)
			.map_err(|_| Error::Truncated { offset: self.offset, needed: buf.len() })?;
		self.offset += buf.len();
		Ok(())
	}

	fn byte(&mut self) -> Result<u8> {
		Ok(self.array::<1>()?[0])
	}

	fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
		let mut buf = [0u8; N];
		self.fill(&mut buf)?;
		Ok(buf)
	}

	/// `len` bytes, allocated no faster than the input delivers them, so a forged length
	/// cannot make us reserve gigabytes.
	fn bytes(&mut self, len: usize) -> Result<Vec<u8>> {
		const CHUNK: usize = 64 * 1024;
		if let Ok(Some(remaining)) = self.input.remaining_len() {
			if remaining < len {
				return Err(Error::Truncated { offset: self.offset, needed: len });
			}
		}
		let mut out = Vec::with_capacity(len.min(CHUNK));
		while out.len() < len {
			let start = out.len();
			let step = (len - start).min(CHUNK);
			out.resize(start + step, 0);
			let offset = self.offset;
			self.fill(&mut out[start..])
				.map_err(|_| Error::Truncated { offset, needed: len - start })?;
		}
		Ok(out)
	}

	fn compact_u32(&mut self) -> Result<u32> {
		let offset = self.offset;
		let first = self.byte()?;
		let bad = Error::BadCompact { offset };
		match first & 0b11 {
			0 => Ok(u32::from(first >> 2)),
			1 => {
				let value = u32::from(u16::from_le_bytes([first, self.byte()?]) >> 2);
				if value < 0x40 {
					return Err(bad);
				}
				Ok(value)
			}
			2 => {
				let rest: [u8; 3] = self.array()?;
				let value = u32::from_le_bytes([first, rest[0], rest[1], rest[2]]) >> 2;
				if value < 0x4000 {
					return Err(bad);
				}
				Ok(value)
			}
			_ => {
				if first >> 2 != 0 {
					return Err(bad);
				}
				let value = u32::from_le_bytes(self.array()?);
				if value < 0x4000_0000 {
					return Err(bad);
				}
				Ok(value)
			}
		}
	}

	fn proof(&mut self) -> Result<Proof> {
		match self.byte()? {
			0 => Ok(Proof::Sr25519 { signature: self.array()?, signer: self.array()? }),
			1 => Ok(Proof::Ed25519 { signature: self.array()?, signer: self.array()? }),
			2 => Ok(Proof::Secp256k1Ecdsa { signature: self.array()?, signer: self.array()? }),
			kind => Err(Error::UnknownProof { kind }),
		}
	}
}
