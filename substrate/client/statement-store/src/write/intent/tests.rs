use super::*;
use std::{fs::File, io::Write};

fn steps(n: u8) -> Vec<Step> {
	vec![
		Step::Add { account: [n; 32], encoding: vec![n; 40] },
		Step::Remove { hash: [n; 32], ban_until: Some(u64::from(n)) },
		Step::Unban { hash: [n; 32], until: 9 },
	]
}

fn append_next(log: &IntentLog, n: u8) -> Result<u64> {
	let seq = log.next_seq();
	log.append(seq, &steps(n))?;
	Ok(seq)
}

fn seqs(read: &IntentRead) -> Vec<u64> {
	read.records.iter().map(|(seq, _)| *seq).collect()
}

#[test]
fn records_read_back_in_order_and_a_torn_tail_is_dropped() {
	let dir = tempfile::tempdir().unwrap();
	let log = IntentLog::create(dir.path(), false, 5).unwrap();
	for seq in 5..8 {
		assert_eq!(append_next(&log, seq as u8).unwrap(), seq);
	}
	drop(log);
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(read.files.len(), 1);
	assert_eq!(read.records, (5..8).map(|seq| (seq, steps(seq as u8))).collect::<Vec<_>>());
	assert!(read.damaged.is_empty());
	// Cut the last record short, as a kill during the append would.
	let path = &read.files[0];
	let len = records_end(&std::fs::read(path).unwrap()) as u64;
	let file = File::options().write(true).open(path).unwrap();
	file.set_len(len - 3).unwrap();
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(seqs(&read), vec![5, 6]);
	assert_eq!(read.damaged.len(), 1);
	assert_eq!(read.gap_after(4), None, "a torn tail is not a gap");
}

#[test]
fn intact_records_after_a_damaged_one_are_kept_and_the_gap_is_named() {
	let dir = tempfile::tempdir().unwrap();
	let log = IntentLog::create(dir.path(), false, 1).unwrap();
	for n in 1..=10 {
		append_next(&log, n).unwrap();
	}
	drop(log);
	let path = intent_files(dir.path()).unwrap()[0].1.clone();
	let mut bytes = std::fs::read(&path).unwrap();
	let record = records_end(&bytes) / 10;
	// A flipped byte in the body of record 3, then one in the length of record 6.
	bytes[2 * record + RECORD_HEADER + 5] ^= 0x40;
	bytes[5 * record + 5] ^= 0x01;
	std::fs::write(&path, bytes).unwrap();
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(seqs(&read), vec![1, 2, 4, 5, 7, 8, 9, 10]);
	assert_eq!(read.damaged.len(), 2);
	assert_eq!(read.gap_after(0), Some((3, 3)));
	assert_eq!(read.gap_after(3), Some((6, 6)));
	assert_eq!(read.gap_after(6), None);
}

#[test]
fn a_failed_append_leaves_nothing_and_does_not_use_up_its_number() {
	let dir = tempfile::tempdir().unwrap();
	let log = IntentLog::create(dir.path(), false, 1).unwrap();
	append_next(&log, 1).unwrap();
	log.fail_appends.store(3, Ordering::Release);
	for n in 2..5 {
		let err = append_next(&log, n).unwrap_err();
		assert!(err.to_string().contains("cannot append to the intent log"), "{err}");
	}
	assert_eq!(log.next_seq(), 2);
	assert_eq!(append_next(&log, 9).unwrap(), 2);
	drop(log);
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(read.records, vec![(1, steps(1)), (2, steps(9))]);
	assert!(read.damaged.is_empty(), "the half-written records were taken back");
}

#[test]
fn a_failed_append_that_is_the_last_leaves_nothing_for_the_next_open_to_read() {
	let dir = tempfile::tempdir().unwrap();
	let log = IntentLog::create(dir.path(), false, 1).unwrap();
	append_next(&log, 1).unwrap();
	log.fail_appends.store(1, Ordering::Release);
	append_next(&log, 2).unwrap_err();
	// No append after it overwrites what it left: the process stops here.
	drop(log);
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(seqs(&read), vec![1]);
	assert!(read.damaged.is_empty(), "the failed append left {:?}", read.damaged);
}

#[test]
fn a_retry_in_a_new_file_supersedes_a_failed_record_that_stayed() {
	let dir = tempfile::tempdir().unwrap();
	let log = IntentLog::create(dir.path(), false, 1).unwrap();
	append_next(&log, 1).unwrap();
	append_next(&log, 2).unwrap();
	// As if batch 3's append failed and could not be taken back.
	let first = intent_files(dir.path()).unwrap()[0].1.clone();
	{
		let mut file = File::options().append(true).open(&first).unwrap();
		let body = (3u64, steps(66)).encode();
		let len = (body.len() as u32).to_le_bytes();
		file.write_all(&MAGIC).unwrap();
		file.write_all(&len).unwrap();
		file.write_all(&checksum_of(&len, &body).to_le_bytes()).unwrap();
		file.write_all(&body).unwrap();
	}
	log.current.lock().broken = true;
	append_next(&log, 3).unwrap();
	append_next(&log, 4).unwrap();
	drop(log);
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(read.files.len(), 2);
	assert_eq!(seqs(&read), vec![1, 2, 3, 4]);
	assert_eq!(read.records[2].1, steps(3), "the retry wins");
}

#[test]
fn records_of_the_format_before_the_magic_are_still_read() {
	let dir = tempfile::tempdir().unwrap();
	let mut bytes = Vec::new();
	for seq in 1..=3u64 {
		let body = (seq, steps(seq as u8)).encode();
		let mut hasher = twox_hash::XxHash64::with_seed(0);
		hasher.write(&body);
		bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
		bytes.extend_from_slice(&hasher.finish().to_le_bytes());
		bytes.extend_from_slice(&body);
	}
	std::fs::write(intent_path(dir.path(), 1), bytes).unwrap();
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(seqs(&read), vec![1, 2, 3]);
}

#[test]
fn released_files_are_deleted_and_the_current_one_kept() {
	let dir = tempfile::tempdir().unwrap();
	let log = IntentLog::create(dir.path(), false, 1).unwrap();
	let big = vec![Step::Add { account: [0; 32], encoding: vec![0; 1 << 20] }];
	for _ in 0..10 {
		let seq = log.next_seq();
		log.append(seq, &big).unwrap();
	}
	let files = intent_files(dir.path()).unwrap();
	assert!(files.len() >= 2, "{files:?}");
	log.release_through(log.last_appended());
	let left = intent_files(dir.path()).unwrap();
	assert_eq!(left.len(), 1);
	assert_eq!(left[0], *files.last().unwrap());
	log.release_all();
	assert!(intent_files(dir.path()).unwrap().is_empty());
}

#[test]
fn a_mapped_file_reads_to_its_last_record_and_a_record_cut_short_before_the_zeros_is_its_end() {
	let dir = tempfile::tempdir().unwrap();
	let path = intent_path(dir.path(), 1);
	let mut file = IntentFile::create(&path, true, 0).unwrap();
	let record = |seq: u64| {
		let body = (seq, steps(seq as u8)).encode();
		let len = (body.len() as u32).to_le_bytes();
		[&MAGIC[..], &len, &checksum_of(&len, &body).to_le_bytes(), &body].concat()
	};
	for seq in 1..=3 {
		file.append(&record(seq), false, None).unwrap();
	}
	drop(file);
	assert_eq!(std::fs::metadata(&path).unwrap().len(), file::INTENT_FILE_BYTES, "allocated");
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(seqs(&read), vec![1, 2, 3]);
	assert!(read.damaged.is_empty(), "the zeros after the records are not damage");

	// A crash in the middle of copying record 4 leaves its first half before the zeros.
	let mut bytes = std::fs::read(&path).unwrap();
	let end: usize = (1..=3).map(|seq| record(seq).len()).sum();
	let half = record(4).len() / 2;
	bytes[end..end + half].copy_from_slice(&record(4)[..half]);
	std::fs::write(&path, &bytes).unwrap();
	let read = read_intents(dir.path()).unwrap();
	assert_eq!(seqs(&read), vec![1, 2, 3]);
	assert_eq!(read.damaged, vec![(path.clone(), end, bytes.len() - end)], "cut short at its end");

	// A file allocated and never written to holds nothing.
	let empty = IntentFile::create(&intent_path(dir.path(), 9), true, 0).unwrap();
	drop(empty);
	assert_eq!(seqs(&read_intents(dir.path()).unwrap()), vec![1, 2, 3]);
}
