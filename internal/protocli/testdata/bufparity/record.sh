#!/bin/sh
# Records buf's output for each case of this directory: run from here with
# buf v1.75.0 on PATH (go install github.com/bufbuild/buf/cmd/buf@v1.75.0).
# Each directory holds the inputs of one or more cases; a case is a file
# NAME.args with the arguments after "buf breaking" (run in that
# directory). buf's stdout goes to NAME.out, its exit status to NAME.code.
# TestBufParity runs plugkit-proto on the same arguments (with --buf-compat
# --buf-names) and compares.
set -u
for a in */*.args; do
	d=${a%/*}
	n=${a##*/}
	n=${n%.args}
	(cd "$d" && eval "buf breaking $(cat "$n.args")" >"$n.out" 2>/dev/null; echo $? >"$n.code")
done
