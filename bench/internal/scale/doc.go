// Package scale drives the scale benchmark's hosts (bench/testdata/pkscale
// and gpscale): each starts many copies of its echo plugin, a few starts in
// flight, makes one call to each, counts what the plugins cost it, and
// then closes them all at once.
package scale
