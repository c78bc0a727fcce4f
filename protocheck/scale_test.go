package protocheck

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// bigMessage is a proto file with one message of n fields.
func bigMessage(n int) map[string][]byte {
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\npackage big;\nmessage M {\n")
	for i, num := 1, 1; i <= n; i, num = i+1, num+1 {
		if num == 19000 {
			num = 20000 // 19000-19999 are reserved for protobuf itself
		}
		fmt.Fprintf(&b, "  int32 f%d = %d;\n", i, num)
	}
	b.WriteString("}\n")
	return map[string][]byte{"big.proto": []byte(b.String())}
}

// BenchmarkSelfCompare compares a message of many fields with itself;
// the time per field must not grow with the field count (the check used
// to look every field up by number with a linear scan).
func BenchmarkSelfCompare(b *testing.B) {
	for _, n := range []int{5000, 20000} {
		img, err := load.NewImage(context.Background(), "big", bigMessage(n), load.LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Breaking(img, img, Options{Use: []string{ruleset.CategoryFILE, ruleset.CategoryADR044}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSelfCompareIsNotQuadratic compares a 50,000-field message with
// itself. With a linear lookup per field this took minutes (100,000
// fields: over 120 s); indexed, it takes about a second even under the race
// detector. BenchmarkSelfCompare shows the scaling; the minute here only
// guards against the quadratic path coming back.
func TestSelfCompareIsNotQuadratic(t *testing.T) {
	img, err := load.NewImage(context.Background(), "big", bigMessage(50000), load.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Breaking(img, img, Options{Use: []string{ruleset.CategoryFILE, ruleset.CategoryADR044}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("comparing a 50,000-field message with itself took over a minute: a lookup per field is linear again")
	}
}
