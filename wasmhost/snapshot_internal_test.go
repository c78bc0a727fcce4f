package wasmhost

import "testing"

// snapshots keeps at most its limit in bytes, dropping the oldest first,
// and never one larger than the limit.
func TestSnapshotsLimit(t *testing.T) {
	s := snapshots{limit: 100}
	key := func(i int) snapKey { return snapKey{argsEnv: string(rune('a' + i))} }
	for i := range 3 {
		s.put(key(i), &snapshot{bytes: 40})
	}
	if s.get(key(0)) != nil || s.get(key(1)) == nil || s.get(key(2)) == nil || s.bytes != 80 {
		t.Fatalf("after three of 40 bytes within 100: kept %d bytes, %d snapshots", s.bytes, len(s.byKey))
	}
	s.put(key(3), &snapshot{bytes: 101})
	if s.get(key(3)) != nil || s.bytes != 80 {
		t.Fatalf("a snapshot over the limit was kept (%d bytes)", s.bytes)
	}
}
