package bufconfig

import "testing"

func TestUnstablePackage(t *testing.T) {
	for pkg, want := range map[string]bool{
		"foo.v1alpha1": true, "foo.bar.v1beta2": true, "foo.v1p1alpha1": true, "foo.v1test": true,
		"foo.v1testfoo": true, "foo.v1alpha": true, "foo.v2beta": true,
		"foo.v1": false, "foo": false, "v1alpha1": false, "foo.v0alpha1": false, "foo.v1alpha0": false,
		"foo.v1alphabeta1": false, "foo.alpha": false, "foo.v1p0beta1": false, "": false,
	} {
		if got := UnstablePackage(pkg); got != want {
			t.Errorf("UnstablePackage(%q) = %v, want %v", pkg, got, want)
		}
	}
}
