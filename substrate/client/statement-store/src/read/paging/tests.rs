use super::within;

#[test]
fn within_keeps_ids_strictly_between_the_bounds() {
	let ids = [1, 3, 5, 7, 9];
	assert_eq!(within(&ids, 3, 9), &[5, 7]);
	assert_eq!(within(&ids, 0, 100), &ids);
	assert!(within(&ids, 9, 100).is_empty());
	assert!(within(&ids, 5, 2).is_empty());
}
