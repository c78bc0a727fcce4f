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

// Two guests share a snapshot only when their arguments and environments
// are the same lists: none made of the other's strings split or joined
// elsewhere.
func TestSnapKeyApart(t *testing.T) {
	for _, c := range [][2][2][]string{
		{{{"x"}, {"y\x01z"}}, {{"x\x01y"}, {"z"}}},
		{{{"a\x00b"}, nil}, {{"a", "b"}, nil}},
		{{{"a"}, {"b"}}, {{"a", "b"}, nil}},
		{{nil, {"A=1"}}, {{"A=1"}, nil}},
	} {
		a, b := newSnapKey(nil, c[0][0], c[0][1]), newSnapKey(nil, c[1][0], c[1][1])
		if a == b {
			t.Errorf("arguments %q and environment %q share a snapshot with arguments %q and environment %q", c[0][0], c[0][1], c[1][0], c[1][1])
		}
	}
}
