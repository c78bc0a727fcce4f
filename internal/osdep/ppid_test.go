package osdep

import "testing"

func TestParsePPID(t *testing.T) {
	for stat, want := range map[string]int{
		"42 (plugin) S 7 42 42 0 -1":             7,
		"42 (a b) c) (d) R 1234 42 42 0 -1 4194": 1234,
	} {
		if got, err := ParsePPID(stat); err != nil || got != want {
			t.Errorf("ParsePPID(%q) = %d, %v; want %d", stat, got, err, want)
		}
	}
	if _, err := ParsePPID("garbage"); err == nil {
		t.Error("ParsePPID of garbage succeeded")
	}
}

func TestStatExited(t *testing.T) {
	for stat, want := range map[string]bool{
		"42 (plugin) S 7 42 42 0 -1": false,
		"42 (plugin) Z 1 42 42 0 -1": true,
		"42 (a) Z) (b) X 1 42 42":    true,
		"42 (a) X) (b) R 1 42 42":    false,
		"garbage":                    false,
		"42 (cut)":                   false,
	} {
		if got := StatExited([]byte(stat)); got != want {
			t.Errorf("StatExited(%q) = %v, want %v", stat, got, want)
		}
	}
}
