#!/bin/sh
# Records buf's output for each case of this directory: run from here with
# buf v1.75.0 on PATH (go install github.com/bufbuild/buf/cmd/buf@v1.75.0).
# Each case directory holds the inputs and a file "args" with the arguments
# after "buf breaking"; buf's stdout goes to want.out, its exit status to
# want.code. TestBufParity runs plugkit-proto on the same arguments (with
# --buf-compat --buf-names) and compares.
set -u
for d in */; do
	d=${d%/}
	[ -f "$d/args" ] || continue
	(cd "$d" && eval "buf breaking $(cat args)" >want.out 2>/dev/null; echo $? >want.code)
done
